package budget_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/daemon/budget"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// The budget against a real kube-apiserver and etcd: optimistic concurrency
// is the API server's, not a fake's.
func TestBudgetOnAPIServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (the test bed's control plane)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir(), NoCRDs: true, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	kc := kubernetes.NewForConfigOrDie(cp.RestConfig())
	// The daemon's own client, as the daemon builds it.
	api, err := kube.NewAPI(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "budget-test"
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	newBudget := func(t *testing.T, name, holder string, slots int, d time.Duration) *budget.Budget {
		t.Helper()
		b, err := budget.New(budget.Config{Client: api, Namespace: ns, Name: name, Slots: slots, Holder: holder,
			Duration: d, Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		return b
	}
	holderOf := func(t *testing.T, lease string) string {
		t.Helper()
		l, err := kc.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return *l.Spec.HolderIdentity
	}

	t.Run("RaceNeverExceedsN", func(t *testing.T) {
		const nodes, slots = 12, 3
		var inside, most atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, nodes)
		for i := 0; i < nodes; i++ {
			b := newBudget(t, "race", fmt.Sprintf("node-%d", i), slots, 20*time.Second)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for round := 0; round < 2; round++ {
					if err := b.Acquire(ctx, nil); err != nil {
						errs <- err
						return
					}
					n := inside.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(30 * time.Millisecond)
					inside.Add(-1)
					if err := b.Release(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if m := most.Load(); m > slots || m < 2 {
			t.Errorf("at most %d nodes held a slot at once, want 2..%d", m, slots)
		}
		leases, err := kc.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{LabelSelector: budget.Label + "=race"})
		if err != nil {
			t.Fatal(err)
		}
		if len(leases.Items) != 0 {
			t.Errorf("%d Leases left after every node released", len(leases.Items))
		}
	})

	t.Run("WaiterSeesHoldersAndGetsReleasedSlot", func(t *testing.T) {
		a := newBudget(t, "release", "node-a", 1, 20*time.Second)
		b := newBudget(t, "release", "node-b", 1, 20*time.Second)
		if err := a.Acquire(ctx, nil); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var reports []string
		got := make(chan error, 1)
		go func() {
			got <- b.Acquire(ctx, func(msg string) { mu.Lock(); reports = append(reports, msg); mu.Unlock() })
		}()
		time.Sleep(time.Second)
		select {
		case err := <-got:
			t.Fatalf("node-b acquired a held slot (err %v)", err)
		default:
		}
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("node-b did not take the released slot within 5s")
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{"Waiting for a disruption slot (1 of 1 in use): held by node-a"}
		if strings.Join(reports, "|") != strings.Join(want, "|") {
			t.Errorf("reports %q, want %q", reports, want)
		}
		if h := holderOf(t, "release-0"); h != "node-b" {
			t.Errorf("holder %q, want node-b", h)
		}
		if err := b.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("RenewalKeepsTheSlot", func(t *testing.T) {
		a := newBudget(t, "renew", "node-a", 1, 2*time.Second)
		b := newBudget(t, "renew", "node-b", 1, 2*time.Second)
		if err := a.Acquire(ctx, nil); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		defer wcancel()
		if err := b.Acquire(wctx, nil); err == nil {
			t.Fatal("node-b took a slot node-a kept renewing")
		}
		if h := holderOf(t, "renew-0"); h != "node-a" {
			t.Errorf("holder %q, want node-a", h)
		}
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ExpiredSlotReclaimed", func(t *testing.T) {
		a := newBudget(t, "expiry", "node-a", 1, 2*time.Second)
		if err := a.Acquire(ctx, nil); err != nil {
			t.Fatal(err)
		}
		a.Close() // the daemon dies: no more renewals
		b := newBudget(t, "expiry", "node-b", 1, 2*time.Second)
		start := time.Now()
		if err := b.Acquire(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < 2*time.Second {
			t.Errorf("node-b reclaimed after %s, before the 2s lease duration", took)
		}
		if h := holderOf(t, "expiry-0"); h != "node-b" {
			t.Errorf("holder %q, want node-b", h)
		}
		// node-a's daemon restarts: its slot is gone, it must wait.
		a2 := newBudget(t, "expiry", "node-a", 1, 2*time.Second)
		wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
		defer wcancel()
		if err := a2.Acquire(wctx, nil); err == nil {
			t.Fatal("restarted node-a acquired a slot node-b holds")
		}
		if err := b.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("RestartedDaemonAdoptsAndReleasesItsSlot", func(t *testing.T) {
		a := newBudget(t, "adopt", "node-a", 1, 20*time.Second)
		if err := a.Acquire(ctx, nil); err != nil {
			t.Fatal(err)
		}
		a.Close()
		a2 := newBudget(t, "adopt", "node-a", 1, 20*time.Second)
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		defer acancel()
		if err := a2.Acquire(actx, nil); err != nil {
			t.Fatalf("restarted daemon did not adopt its slot at once: %v", err)
		}
		a2.Close()
		// Restarted again after the uncordon: Release finds the slot.
		a3 := newBudget(t, "adopt", "node-a", 1, 20*time.Second)
		if err := a3.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if h := holderOf(t, "adopt-0"); h != "" {
			t.Errorf("slot still held by %q after release", h)
		}
	})

	t.Run("LostSlotIsNoticed", func(t *testing.T) {
		a := newBudget(t, "lost", "node-a", 1, 2*time.Second)
		if err := a.Acquire(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// An administrator hands the slot to another node.
		l, err := kc.CoordinationV1().Leases(ns).Get(ctx, "lost-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		other := "node-b"
		l.Spec.HolderIdentity = &other
		if _, err := kc.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for a.Holding() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if a.Holding() {
			t.Fatal("node-a still believes it holds a slot node-b holds")
		}
		if h := holderOf(t, "lost-0"); h != "node-b" {
			t.Errorf("holder %q, want node-b (the renewal must not overwrite it)", h)
		}
	})

	t.Run("UnlabelledLeaseIsAnError", func(t *testing.T) {
		// A Lease of a slot's name without the budget's label: the list
		// does not show it, the create finds it. Said at once, not retried
		// for ever.
		if _, err := kc.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "odd-0"}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b := newBudget(t, "odd", "node-a", 1, 20*time.Second)
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		defer acancel()
		err := b.Acquire(actx, nil)
		if err == nil || !strings.Contains(err.Error(), "Lease budget-test/odd-0 exists without label nodeconfd.io/disruption-budget=odd") {
			t.Fatalf("Acquire: %v, want an error naming the unlabelled Lease", err)
		}
	})

	t.Run("FailedRenewalRetriedSoon", func(t *testing.T) {
		// Renewals every 4s; the API refuses them for the first 4.5s. The
		// retry comes about a second after the failure, not 4s later.
		var failing atomic.Bool
		b, err := budget.New(budget.Config{Client: flaky{api, &failing}, Namespace: ns, Name: "flaky",
			Slots: 1, Holder: "node-a", Duration: 20 * time.Second, Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		failing.Store(true)
		start := time.Now()
		if err := b.Acquire(ctx, nil); err != nil {
			t.Fatal(err)
		}
		first := renewTime(t, kc, ns, "flaky-0")
		time.Sleep(time.Until(start.Add(4500 * time.Millisecond)))
		failing.Store(false)
		for renewTime(t, kc, ns, "flaky-0").Equal(first) {
			if time.Since(start) > 9*time.Second {
				t.Fatalf("not renewed %s after the start", time.Since(start).Round(time.Millisecond))
			}
			time.Sleep(50 * time.Millisecond)
		}
		took := time.Since(start)
		t.Logf("renewed %s after the start", took.Round(time.Millisecond))
		if took > 6500*time.Millisecond {
			t.Errorf("renewed %s after the start, want the retry within about a second of the failure at 4s", took)
		}
	})

	t.Run("KeepDoesNotWait", func(t *testing.T) {
		a := newBudget(t, "keep", "node-a", 1, 20*time.Second)
		b := newBudget(t, "keep", "node-b", 1, 20*time.Second)
		if err := a.Acquire(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// A restarted daemon of node-a keeps its slot; node-b gets none.
		a.Close()
		a2 := newBudget(t, "keep", "node-a", 1, 20*time.Second)
		if ok, err := a2.Keep(ctx); err != nil || !ok || !a2.Holding() {
			t.Fatalf("Keep of node-a's own slot: %v %v", ok, err)
		}
		if ok, err := b.Keep(ctx); err != nil || ok {
			t.Fatalf("Keep of node-b while node-a holds the slot: %v %v, want false at once", ok, err)
		}
		if err := a2.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.Keep(ctx); err != nil || !ok {
			t.Fatalf("Keep of node-b with the slot free: %v %v", ok, err)
		}
		if h := holderOf(t, "keep-0"); h != "node-b" {
			t.Errorf("holder %q, want node-b", h)
		}
	})

	t.Run("FailedKeepLeavesTheSlotToRelease", func(t *testing.T) {
		// After the reboot, Keep finds the node's own slot but cannot renew
		// it (the API refuses); the uncordon's Release must still find and
		// delete it, or the whole cluster waits a lease duration.
		a := newBudget(t, "keepfail", "node-a", 1, 20*time.Second)
		if err := a.Acquire(ctx, nil); err != nil {
			t.Fatal(err)
		}
		a.Close()
		var failing atomic.Bool
		failing.Store(true)
		a2, err := budget.New(budget.Config{Client: flaky{api, &failing}, Namespace: ns,
			Name: "keepfail", Slots: 1, Holder: "node-a", Duration: 20 * time.Second, Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a2.Close)
		if ok, err := a2.Keep(ctx); err == nil || ok {
			t.Fatalf("Keep with the API refusing: %v %v, want an error", ok, err)
		}
		failing.Store(false)
		if err := a2.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if h := holderOf(t, "keepfail-0"); h != "" {
			t.Errorf("after Release the slot is held by %q, want free", h)
		}
	})
}

// flaky is the API with Lease updates refused while failing is set: an API
// server outage, for the renewals only.
type flaky struct {
	kube.API
	failing *atomic.Bool
}

func (f flaky) Leases(ns string) kube.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return flakyLeases{f.API.Leases(ns), f.failing}
}

type flakyLeases struct {
	kube.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
	failing *atomic.Bool
}

func (f flakyLeases) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if f.failing.Load() {
		return nil, apierrors.NewServiceUnavailable("the API server is down (test)")
	}
	return f.Resource.Update(ctx, l, opts)
}

func renewTime(t *testing.T, kc kubernetes.Interface, ns, name string) time.Time {
	t.Helper()
	l, err := kc.CoordinationV1().Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Spec.RenewTime.Time
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// apiServer starts a control plane of the test's own (skipping the test
// without root) with the namespace ns, and returns it and an admin client.
func apiServer(ctx context.Context, t *testing.T, ns string) (*controlplane.ControlPlane, kubernetes.Interface) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (the test bed's control plane)")
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir(), NoCRDs: true, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	kc := kubernetes.NewForConfigOrDie(cp.RestConfig())
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cp, kc
}
