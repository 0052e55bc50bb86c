package budget_test

import (
	"context"
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
	c := rollout(ctx, t, cp, kc, ns, n, 2) // n nodes take a slot each: n handoffs
	t.Logf("n=%d waiters, 2 slots: %.1f requests per node (per handoff), %.1f in the second half; %s",
		n, c.requests, c.lateRequests, c.verbs)
	// list, watch, a lost first try (create and get), the queue entry
	// (create, delete), the take, the release: 8; a waiter behind the
	// head lists the slots first, and lists and watches again when the
	// entry it watches goes: 3 more; a resumed watch or a race lost to a
	// newcomer adds one or two.
	if c.requests > 13 {
		t.Errorf("n=%d: %.1f requests per node, want at most 13", n, c.requests)
	}
	// The second half, once every daemon has joined the queue: the start-up
	// race's share depends on how the first lists interleave (under load,
	// more daemons lose a race and line up again).
	return c.lateRequests
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
