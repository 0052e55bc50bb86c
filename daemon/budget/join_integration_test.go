package budget_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/daemon/budget"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// Nodes joining a long queue one after another list only the entries
// queued just before theirs, not the whole queue; moving into the head
// they list only what is ahead of them; and they take the slot in queue
// order: also with a daemon of an earlier version among them, whose entry
// has no queued-at label (so no joiner's window shows it).
func joinListsTheNewest(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, kc kubernetes.Interface, ns string) {
	const name, n, old, window = "join", 60, 30, 3 * time.Second
	cfg := func(holder string) budget.Config {
		return budget.Config{Namespace: ns, Name: name, Slots: 1, Holder: holder, Duration: 30 * time.Second,
			JoinWindow: window, ClockSkew: 200 * time.Millisecond}
	}
	holder := meteredBudget(t, cp, &meter{verbs: map[string]int64{}}, cfg("node-hold"))
	if err := holder.Acquire(ctx, nil); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	o := newTurnOrder(n)
	listed := make([]int64, n)
	meters := make([]*meter, n)
	first := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		m, msgs := &meter{verbs: map[string]int64{}}, make(chan string, 1)
		meters[i] = m
		c := cfg(fmt.Sprintf("node-%d", i))
		b := meteredBudget(t, cp, m, c)
		if i == old {
			b = oldVersion(t, cp, c)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.takeReporting(ctx, actx, b, c.Holder, func(msg string) {
				select {
				case msgs <- msg:
				default:
				}
			})
		}()
		select { // its first wait reported: it has joined and found its place
		case first[i] = <-msgs:
		case <-actx.Done():
			t.Fatalf("node-%d did not report its wait", i)
		}
		listed[i] = m.listed.Load()
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("Leases listed to join, by node: %v", listed)
	for i := old + 5; i < n; i++ {
		// queueUnlessFree's list of the slot, then the window's entries (at
		// most 30 at 10 joins a second, and its own), against the slot and
		// the i+1 entries of a whole list.
		if listed[i] > 33 {
			t.Errorf("node-%d listed %d Leases to join behind %d waiters, want the window's (at most 33)", i, listed[i], i)
		}
	}
	checkAhead(t, first)
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	o.check(t, n)
	moved := make([]int64, n)
	for i := range moved {
		moved[i] = meters[i].listed.Load() - listed[i]
	}
	t.Logf("Leases listed moving into the head, by node: %v", moved)
	for i := 10; i < n-20; i++ {
		// The slot, the entries ahead (up to a head's worth, 3, once the
		// queue moves) and those queued within ClockSkew after it; a whole
		// list would show the n-i+3 left.
		if moved[i] > 12 {
			t.Errorf("node-%d listed %d Leases moving into the head, want what is ahead of it (at most 12)", i, moved[i])
		}
	}
}

// checkAhead checks the first waiting message of each waiter node-i: i
// ahead of it, exactly in the head (3 for 1 slot), else at least a head's
// worth and no more than i.
func checkAhead(t *testing.T, first []string) {
	t.Helper()
	re := regexp.MustCompile(`; (at least )?(\d+) nodes? ahead in the queue$`)
	for i, msg := range first {
		m := re.FindStringSubmatch(msg)
		if i == 0 {
			if m != nil {
				t.Errorf("node-0, first in the queue: %q", msg)
			}
			continue
		}
		if m == nil {
			t.Errorf("node-%d: %q names no nodes ahead", i, msg)
			continue
		}
		k, _ := strconv.Atoi(m[2])
		switch atLeast := m[1] != ""; {
		case i < 3 && (atLeast || k != i):
			t.Errorf("node-%d in the head: %q, want exactly %d ahead", i, msg, i)
		case k > i || k < min(i, 3):
			t.Errorf("node-%d: %q, want %d ahead or at least 3 of them", i, msg, i)
		case i >= 40 && !atLeast:
			t.Errorf("node-%d joined behind a long queue: %q, want the lower bound of its window's list", i, msg)
		}
	}
}

// oldVersion is the budget of a daemon of an earlier version, whose queue
// entry has no queued-at label.
func oldVersion(t *testing.T, cp *controlplane.ControlPlane, cfg budget.Config) *budget.Budget {
	t.Helper()
	api, err := kube.NewAPI(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client = unlabelled{api}
	b, err := budget.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

type unlabelled struct{ kube.API }

func (u unlabelled) Leases(ns string) kube.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return unlabelledLeases{u.API.Leases(ns)}
}

type unlabelledLeases struct {
	kube.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
}

func (u unlabelledLeases) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	l = l.DeepCopy()
	delete(l.Labels, budget.QueuedAtLabel)
	return u.Resource.Create(ctx, l, opts)
}
