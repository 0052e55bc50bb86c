package policy

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/budget"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
)

// ownQueue runs the disruption budget of node A with its pod's token, so
// that RBAC and the admission policies judge its queue entry as in a
// cluster: node A finds its entry from before a restart, touches it (an
// update), waits while node B holds the one slot, takes it once released
// and removes its entry; an entry naming node B is refused.
func ownQueue(ctx context.Context, t *testing.T, b *bed) {
	const name = "policy-queue"
	admin := b.admin.CoordinationV1().Leases(namespace)
	slot := lease(budget.SlotName(name, 0), nodeB, time.Now(), 60)
	slot.Labels = map[string]string{budget.Label: name}
	if _, err := admin.Create(ctx, slot, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	api, err := kube.NewAPI(b.bound)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(holder string) *coordinationv1.Lease {
		l := lease(budget.QueueName(name, holder), holder, time.Now(), 60)
		l.Labels = map[string]string{budget.Label: name, budget.RoleLabel: budget.RoleWaiter}
		return l
	}
	leases := api.Leases(namespace)
	if _, err := leases.Create(ctx, entry(nodeB), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node A creating a queue entry of node B: %v, want forbidden", err)
	}
	old, err := leases.Create(ctx, entry(nodeA), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node A creating its queue entry: %v", err)
	}
	bud, err := budget.New(budget.Config{Client: api, Namespace: namespace, Name: name, Slots: 1, Holder: nodeA,
		Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer bud.Close()
	acquired := make(chan error, 1)
	go func() { acquired <- bud.Acquire(ctx, nil) }()
	eventually(ctx, t, "queue entry touched", func() error {
		l, err := admin.Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil || l.ResourceVersion == old.ResourceVersion {
			return errors.Join(err, errors.New("not touched yet"))
		}
		return nil
	})
	if err := admin.Delete(ctx, slot.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-acquired:
		if err != nil {
			t.Fatalf("node A waiting in the queue: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node A did not take the released slot within 30s")
	}
	if _, err := admin.Get(ctx, old.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node A's queue entry after it took the slot: %v, want not found", err)
	}
	if err := bud.Release(ctx); err != nil {
		t.Errorf("node A releasing the slot: %v", err)
	}
}
