package budget_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/daemon/budget"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// A slot's handoff costs a constant number of requests, however many
// daemons wait: of the waiters only the one whose turn it is asks the API
// server anything, and waiting is one watch, not polling. Counted on the
// wire (every request each daemon's client sends, watches included), for
// 10 and 30 waiters on 2 slots.
func TestBudgetQueueOnAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns = "budget-queue"
	cp, kc := apiServer(ctx, t, ns)
	perNode := map[int]float64{}
	for _, n := range []int{10, 30} {
		perNode[n] = handoffs(ctx, t, cp, kc, ns, n)
	}
	if perNode[30] > perNode[10]+3 {
		t.Errorf("requests per handoff grow with the waiters: %.1f at 10, %.1f at 30 (second halves)", perNode[10], perNode[30])
	}
	t.Run("DeadWaiterSkipped", func(t *testing.T) { deadWaiter(ctx, t, cp, kc, ns) })
}

// handoffs runs n daemons through a budget of 2 slots, each taking a slot
// once, and returns the requests they sent per node.
func handoffs(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, kc kubernetes.Interface, ns string, n int) float64 {
	const slots = 2
	name := fmt.Sprintf("queue-%d", n)
	var requests, watches, mark atomic.Int64
	var inside, most, acquired atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		cfg := cp.RestConfig()
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return counting{rt, &requests, &watches}
		}
		api, err := kube.NewAPI(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := budget.New(budget.Config{Client: api, Namespace: ns, Name: name, Slots: slots,
			Holder: fmt.Sprintf("node-%02d", i), Duration: 20 * time.Second, Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Acquire(ctx, nil); err != nil {
				errs <- err
				return
			}
			if acquired.Add(1) == int32(n/2) {
				mark.Store(requests.Load())
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(200 * time.Millisecond)
			inside.Add(-1)
			if err := b.Release(ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := most.Load(); m > slots {
		t.Errorf("n=%d: %d nodes held a slot at once, want at most %d", n, m, slots)
	}
	left, err := kc.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{LabelSelector: budget.Label + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("n=%d: %d Leases (slots or queue entries) left after every node released", n, len(left.Items))
	}
	total := requests.Load()
	perNode := float64(total) / float64(n)
	// n nodes take a slot each: n handoffs.
	t.Logf("n=%d waiters, %d slots: %d requests (%d watches), %.1f per node, %.1f per handoff",
		n, slots, total, watches.Load(), perNode, float64(total)/float64(n))
	// list, watch, a lost first try (create and get), the queue entry
	// (create, delete), the take, the release: 8; a waiter behind the
	// head lists the slots first, and lists and watches again when the
	// entry it watches goes: 3 more; a resumed watch or a race lost to a
	// newcomer adds one or two.
	if perNode > 13 {
		t.Errorf("n=%d: %.1f requests per node, want at most 13", n, perNode)
	}
	// The second half, once every daemon has joined the queue: the start-up
	// race's share depends on how the first lists interleave (under load,
	// more daemons lose a race and line up again).
	late := float64(total-mark.Load()) / float64(n-n/2)
	t.Logf("n=%d: %.1f requests per handoff in the second half", n, late)
	return late
}

// A waiter that died keeps its place at the head of the queue; the next
// one takes the slot once the dead one's turn has lasted the grace, not
// never.
func deadWaiter(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, kc kubernetes.Interface, ns string) {
	const name, grace = "dead", 2 * time.Second
	leases := kc.CoordinationV1().Leases(ns)
	ghost := "node-ghost"
	// Renewed just now: not expired (an expired entry is skipped at once).
	old := metav1.NewMicroTime(time.Now())
	var seconds int32 = 60
	_, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: budget.QueueName(name, ghost),
		Labels: map[string]string{budget.Label: name, budget.RoleLabel: budget.RoleWaiter}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &ghost, LeaseDurationSeconds: &seconds, RenewTime: &old}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	api, err := kube.NewAPI(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(budget.Config{Client: api, Namespace: ns, Name: name, Slots: 1, Holder: "node-live",
		Duration: 20 * time.Second, TurnGrace: grace, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.Acquire(actx, nil); err != nil {
		t.Fatalf("the live waiter behind a dead one: %v", err)
	}
	if took := time.Since(start); took < grace {
		t.Errorf("the live waiter took the slot after %s, before the dead one's turn lapsed (%s)", took, grace)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// counting counts the requests sent, and the watches among them.
type counting struct {
	rt                http.RoundTripper
	requests, watches *atomic.Int64
}

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	if r.URL.Query().Get("watch") == "true" {
		c.watches.Add(1)
	}
	return c.rt.RoundTrip(r)
}
