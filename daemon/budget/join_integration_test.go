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
// order. Also with, among them, a daemon of an earlier version (its entry
// has no queued-at label, so no joiner's window shows it), one whose clock
// is a minute ahead (it relabels its entry), and a compromised node's
// entry, renewed but labelled with no time, which is in nobody's queue.
func joinListsTheNewest(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, kc kubernetes.Interface, ns string) {
	const name, n, old, ahead, evil, window = "join", 60, 30, 20, 40, 2 * time.Second
	cfg := func(holder string) budget.Config {
		return budget.Config{Namespace: ns, Name: name, Slots: 1, Holder: holder, Duration: 30 * time.Second,
			JoinWindow: window, ClockSkew: 200 * time.Millisecond, TurnGrace: time.Minute}
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
		switch i {
		case old:
			b = wrapped(t, cp, c, func(l *coordinationv1.Lease) { delete(l.Labels, budget.QueuedAtLabel) })
		case ahead:
			b = wrapped(t, cp, c, func(l *coordinationv1.Lease) {
				ms, _ := strconv.ParseInt(l.Labels[budget.QueuedAtLabel], 10, 64)
				l.Labels[budget.QueuedAtLabel] = strconv.FormatInt(ms+60_000, 10)
			})
		case evil:
			compromisedEntry(actx, t, kc, ns, name)
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
		// queueUnlessFree's list of the slot, then the window's entries (the
		// window and the second its creationTimestamp truncates: at most 30
		// at 10 joins a second, and its own), against the slot and the i+1
		// entries of a whole list.
		if listed[i] > 33 {
			t.Errorf("node-%d listed %d Leases to join behind %d waiters, want the window's (at most 33)", i, listed[i], i)
		}
	}
	checkAhead(t, first)
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	o.check(t, n)
	// node-evil's entry would hold each waiter that saw it for a whole turn
	// (TurnGrace, a minute here) had it been in the queue.
	if took := time.Since(released); took > 45*time.Second {
		t.Errorf("the waiters took %s to get the slot one after another, want well under TurnGrace (%s): "+
			"the compromised entry held them", took.Round(time.Second), time.Minute)
	}
	moved := make([]int64, n)
	for i := range moved {
		moved[i] = meters[i].listed.Load() - listed[i]
	}
	t.Logf("Leases listed moving into the head, by node: %v", moved)
	for i := 10; i < n-20; i++ {
		if i > old && i <= old+3 {
			continue // their windows missed node-old: they watched too far ahead, and listed twice
		}
		// The slot, node-old's entry, the entries ahead (a head's worth, 3,
		// once the queue moves) and those queued within the second of its
		// creationTimestamp and ClockSkew after it (12 at 10 joins a
		// second); a whole list would show the n-i+3 left.
		if moved[i] > 20 {
			t.Errorf("node-%d listed %d Leases moving into the head, want what is ahead of it (at most 20)", i, moved[i])
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

// compromisedEntry queues node-evil with a queued-at label that is no
// time, and renews the entry every 500 ms (so every head waiter's watch
// shows it) until ctx ends, then deletes it.
func compromisedEntry(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns, name string) {
	t.Helper()
	leases := kc.CoordinationV1().Leases(ns)
	holder, now, seconds := "node-evil", metav1.NewMicroTime(time.Now()), int32(3600)
	l, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: budget.QueueName(name, holder), Labels: map[string]string{budget.Label: name,
			budget.RoleLabel: budget.RoleWaiter, budget.QueuedAtLabel: "soon"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer func() { _ = leases.Delete(context.Background(), l.Name, metav1.DeleteOptions{}) }()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
				return
			}
		}
	}()
}

// wrapped is the budget of a daemon whose queue entries are changed by
// edit before they are created: an earlier version's, or a clock's.
func wrapped(t *testing.T, cp *controlplane.ControlPlane, cfg budget.Config, edit func(*coordinationv1.Lease)) *budget.Budget {
	t.Helper()
	api, err := kube.NewAPI(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client = editing{api, edit}
	b, err := budget.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

type editing struct {
	kube.API
	edit func(*coordinationv1.Lease)
}

func (e editing) Leases(ns string) kube.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return editingLeases{e.API.Leases(ns), e.edit}
}

type editingLeases struct {
	kube.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
	edit func(*coordinationv1.Lease)
}

// Create edits queue entries only.
func (e editingLeases) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if l.Labels[budget.RoleLabel] == budget.RoleWaiter {
		l = l.DeepCopy()
		e.edit(l)
	}
	return e.Resource.Create(ctx, l, opts)
}
