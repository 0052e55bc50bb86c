package budget_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/daemon/budget"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// A queue entry first in line that its holder renews twice a second but
// never takes its turn (a stuck daemon, or a compromised node's, which
// also queues five times more to fill the head): the head skips it after
// its grace however often it is renewed, and the waiter behind the head
// that watches it learns from its renewals that the queue moved past it.
// Every other waiter gets its slot, in queue order.
func stuckAhead(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, kc kubernetes.Interface, ns string) {
	const name, n = "stuck", 4
	first, _ := killable(t, cp, budget.Config{Namespace: ns, Name: name, Slots: 1, Holder: "first"})
	if err := first.Acquire(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	renewed := renewForEver(rctx, t, kc, ns, name)
	time.Sleep(1100 * time.Millisecond) // entries' creation times are whole seconds
	order := newTurnOrder(n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		holder := fmt.Sprintf("node-%d", i)
		b, _ := killable(t, cp, budget.Config{Namespace: ns, Name: name, Slots: 1, Holder: holder})
		wg.Add(1)
		go func() {
			defer wg.Done()
			order.take(ctx, ctx, b, holder)
		}()
		waitEntries(ctx, t, kc, ns, name, i+7)
		time.Sleep(1100 * time.Millisecond)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	order.check(t, n)
	stop()
	if k := <-renewed; k < 10 {
		t.Errorf("the stuck entry was renewed %d times, want it renewed throughout", k)
	}
}

// renewForEver creates the queue entry of holder "stuck" and five more of
// the same holder, and renews them all every 500 ms until ctx ends; the
// channel then gives the renewals' count.
func renewForEver(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns, name string) <-chan int {
	t.Helper()
	leases := kc.CoordinationV1().Leases(ns)
	holder, secs, now := "stuck", int32(entryDuration/time.Second), metav1.NewMicroTime(time.Now())
	names := []string{budget.QueueName(name, holder)}
	for i := range 5 {
		names = append(names, fmt.Sprintf("%s-q-flood-%d", name, i))
	}
	var own []*coordinationv1.Lease
	for _, n := range names {
		l, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: n,
				Labels: map[string]string{budget.Label: name, budget.RoleLabel: budget.RoleWaiter}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs,
				AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		own = append(own, l)
	}
	out := make(chan int, 1)
	go func() {
		k := 0
		defer func() {
			for _, l := range own {
				_ = leases.Delete(context.Background(), l.Name, metav1.DeleteOptions{})
			}
			out <- k
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			for i, l := range own {
				l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("renewing the stuck entry %s: %v", l.Name, err)
					}
					return
				}
				own[i] = updated
			}
			k++
		}
	}()
	return out
}
