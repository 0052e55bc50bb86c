package budget_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/daemon/budget"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// A node that comes to wait while a slot is free, a long queue in place
// (mostly the moment of a handoff, the queue's head about to take the
// slot), lists a head's worth of the queue, not all of it, and queues at
// once behind it; with a queue shorter than the free slots it takes one.
// The queue is entries made with the test's client: they never take a slot.
func freeSlotLongQueue(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, kc kubernetes.Interface, ns string) {
	const name, n = "free", 60
	cfg := budget.Config{Namespace: ns, Name: name, Slots: 2, Holder: "node-new", Duration: 30 * time.Second,
		JoinWindow: time.Second, ClockSkew: 200 * time.Millisecond}
	var queue []string
	for i := 0; i < n; i++ {
		queue = append(queue, queueEntry(ctx, t, kc, ns, name, fmt.Sprintf("node-q-%02d", i)))
		time.Sleep(100 * time.Millisecond)
	}
	m, msgs := &meter{verbs: map[string]int64{}}, make(chan string, 1)
	b := meteredBudget(t, cp, m, cfg)
	done := make(chan error, 1)
	go func() {
		done <- b.Acquire(ctx, func(msg string) {
			select {
			case msgs <- msg:
			default:
			}
		})
	}()
	var first string
	select {
	case first = <-msgs:
	case err := <-done:
		t.Fatalf("the node did not wait behind %d entries for 2 free slots: %v", n, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not report its wait")
	}
	// The slots (none), a head's worth of entries (4), then its join
	// window's (1 s and the second its creationTimestamp truncates: at
	// most 20 at 10 a second, and its own); a whole list would be 61.
	listed := m.listed.Load()
	t.Logf("Leases listed to queue behind %d entries with 2 slots free: %d", n, listed)
	if listed > 25 {
		t.Errorf("the node listed %d Leases to queue behind %d entries with a slot free, want at most 25", listed, n)
	}
	if !strings.Contains(first, "at least") {
		t.Errorf("first waiting message %q, want \"at least k nodes ahead\"", first)
	}
	for _, e := range queue {
		deleteLease(ctx, t, kc, ns, e)
	}
	if err := <-done; err != nil {
		t.Fatalf("the node did not take a slot once the queue went: %v", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A queue of one for two free slots leaves the node one: it takes it
	// without queueing (one POST, the slot's).
	short := queueEntry(ctx, t, kc, ns, name, "node-q-short")
	m = &meter{verbs: map[string]int64{}}
	b = meteredBudget(t, cp, m, cfg)
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.Acquire(actx, nil); err != nil {
		t.Fatalf("the node did not take a free slot with one waiter queued: %v", err)
	}
	if posts := m.verbs["POST"]; posts != 1 {
		t.Errorf("the node sent %d POSTs to take a slot the queue left it, want 1 (the slot, no entry of its own)", posts)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	deleteLease(ctx, t, kc, ns, short)
}

// queueEntry creates holder's queue entry in budget name, live for two
// minutes, as its daemon would; it returns its name.
func queueEntry(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns, name, holder string) string {
	t.Helper()
	now, seconds := metav1.NewMicroTime(time.Now()), int32(120)
	l, err := kc.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: budget.QueueName(name, holder), Labels: map[string]string{budget.Label: name,
			budget.RoleLabel: budget.RoleWaiter, budget.QueuedAtLabel: fmt.Sprint(now.UnixMilli())}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Name
}

func deleteLease(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns, name string) {
	t.Helper()
	if err := kc.CoordinationV1().Leases(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
