package budget_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/daemon/budget"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// Waiters behind the head of the queue watch one entry each: a daemon
// killed in the middle of the queue (its entry left behind, never renewed)
// does not stop the queue, and one restarted while waiting keeps its place.
func TestBudgetQueueBehindOnAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const ns = "budget-behind"
	cp, kc := apiServer(ctx, t, ns)
	t.Run("KilledWaiterInTheMiddle", func(t *testing.T) { killedInTheMiddle(ctx, t, cp, kc, ns) })
	t.Run("RestartedWaiterKeepsItsPlace", func(t *testing.T) { restartedKeepsPlace(ctx, t, cp, kc, ns) })
	t.Run("RenewedButStuckEntryAhead", func(t *testing.T) { stuckAhead(ctx, t, cp, kc, ns) })
	t.Run("JoinListsTheNewestEntries", func(t *testing.T) { joinListsTheNewest(ctx, t, cp, kc, ns) })
	t.Run("FreeSlotLongQueue", func(t *testing.T) { freeSlotLongQueue(ctx, t, cp, kc, ns) })
}

// entryDuration is the queue entries' lease duration in these tests.
const entryDuration = 6 * time.Second

// killable is a daemon's budget whose connection to the API server can be
// cut, as when its process is killed: it then cannot remove its entry.
func killable(t *testing.T, cp *controlplane.ControlPlane, cfg budget.Config) (*budget.Budget, *atomic.Bool) {
	t.Helper()
	dead := &atomic.Bool{}
	rc := cp.RestConfig()
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return cut{rt, dead} }
	api, err := kube.NewAPI(rc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client, cfg.Log = api, zaptest.NewLogger(t)
	cfg.EntryDuration, cfg.TurnGrace, cfg.Duration = entryDuration, 2*time.Second, 30*time.Second
	b, err := budget.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b, dead
}

type cut struct {
	rt   http.RoundTripper
	dead *atomic.Bool
}

func (c cut) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.dead.Load() {
		return nil, errors.New("the daemon was killed")
	}
	return c.rt.RoundTrip(r)
}

// entries counts the queue entries of budget name.
func entries(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns, name string) int {
	t.Helper()
	l, err := kc.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{
		LabelSelector: budget.Label + "=" + name + "," + budget.RoleLabel + "=" + budget.RoleWaiter})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

func waitEntries(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns, name string, n int) {
	t.Helper()
	for entries(ctx, t, kc, ns, name) < n {
		if ctx.Err() != nil {
			t.Fatalf("waiting for %d queue entries: %v", n, ctx.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// 30 waiters for 2 slots; once all queued, the one in the middle dies. The
// others all get their slot, one at a time per slot; the waiter that
// watched the dead entry skips it after the entry's duration.
func killedInTheMiddle(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, kc kubernetes.Interface, ns string) {
	const name, n, slots, victim = "killed", 30, 2, 15
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	hold, release := context.WithCancel(ctx)
	// A first holder keeps both slots until all have queued.
	for i := 0; i < slots; i++ {
		b, _ := killable(t, cp, budget.Config{Namespace: ns, Name: name, Slots: slots, Holder: fmt.Sprintf("first-%d", i)})
		if err := b.Acquire(ctx, nil); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-hold.Done()
			if err := b.Release(ctx); err != nil {
				errs <- err
			}
		}()
	}
	vctx, kill := context.WithCancel(ctx)
	defer kill()
	var victimDead *atomic.Bool
	for i := 0; i < n; i++ {
		b, dead := killable(t, cp, budget.Config{Namespace: ns, Name: name, Slots: slots, Holder: fmt.Sprintf("node-%02d", i)})
		actx := ctx
		if i == victim {
			actx, victimDead = vctx, dead
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Acquire(actx, nil); err != nil {
				if actx != vctx {
					errs <- err
				}
				return
			}
			k := inside.Add(1)
			for m := most.Load(); k > m && !most.CompareAndSwap(m, k); m = most.Load() {
			}
			time.Sleep(200 * time.Millisecond)
			inside.Add(-1)
			if err := b.Release(ctx); err != nil {
				errs <- err
			}
		}()
		time.Sleep(20 * time.Millisecond)
	}
	waitEntries(ctx, t, kc, ns, name, n)
	victimDead.Store(true)
	kill()
	start := time.Now()
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("%d waiters behind a dead one through %d slots in %s", n-1, slots, took)
	if k := most.Load(); k > slots {
		t.Errorf("%d nodes held a slot at once, want at most %d", k, slots)
	}
	if left := entries(ctx, t, kc, ns, name); left != 1 {
		t.Errorf("%d queue entries left, want the dead one's only", left)
	}
}

// Waiters queue in turn behind a held slot; the third (in the head) and
// the fifth (behind it) are killed and restarted while waiting: they find
// their entries and keep their places.
func restartedKeepsPlace(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, kc kubernetes.Interface, ns string) {
	const name, n = "restart", 7
	first, _ := killable(t, cp, budget.Config{Namespace: ns, Name: name, Slots: 1, Holder: "first"})
	if err := first.Acquire(ctx, nil); err != nil {
		t.Fatal(err)
	}
	order := newTurnOrder(2 * n)
	var wg sync.WaitGroup
	wait := func(actx context.Context, b *budget.Budget, holder string) {
		defer wg.Done()
		order.take(ctx, actx, b, holder)
	}
	kills := map[int]func(){}
	for i := 0; i < n; i++ {
		holder := fmt.Sprintf("node-%d", i)
		b, dead := killable(t, cp, budget.Config{Namespace: ns, Name: name, Slots: 1, Holder: holder})
		actx, cancel := context.WithCancel(ctx)
		defer cancel()
		kills[i] = func() { dead.Store(true); cancel() }
		wg.Add(1)
		go wait(actx, b, holder)
		waitEntries(ctx, t, kc, ns, name, i+1)
		time.Sleep(1100 * time.Millisecond) // entries' creation times are whole seconds
	}
	for _, i := range []int{2, 4} {
		kills[i]()
		holder := fmt.Sprintf("node-%d", i)
		b, _ := killable(t, cp, budget.Config{Namespace: ns, Name: name, Slots: 1, Holder: holder})
		wg.Add(1)
		go wait(ctx, b, holder)
	}
	time.Sleep(time.Second)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	order.check(t, n)
	if left := entries(ctx, t, kc, ns, name); left != 0 {
		t.Errorf("%d queue entries left", left)
	}
}

// turnOrder records the order in which waiters took the slot.
type turnOrder struct {
	mu   sync.Mutex
	got  []string
	errs chan error
}

func newTurnOrder(waiters int) *turnOrder { return &turnOrder{errs: make(chan error, waiters)} }

// take waits for b's slot under actx (a cancelled wait is no error), notes
// holder's turn, holds the slot 100 ms and gives it back under ctx.
func (o *turnOrder) take(ctx, actx context.Context, b *budget.Budget, holder string) {
	o.takeReporting(ctx, actx, b, holder, nil)
}

// takeReporting is take, with the waiting messages to report.
func (o *turnOrder) takeReporting(ctx, actx context.Context, b *budget.Budget, holder string, report func(string)) {
	if err := b.Acquire(actx, report); err != nil {
		if actx.Err() == nil {
			o.errs <- err
		}
		return
	}
	o.mu.Lock()
	o.got = append(o.got, holder)
	o.mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	if err := b.Release(ctx); err != nil {
		o.errs <- err
	}
}

// check fails t on an error of a waiter, or unless node-0 … node-(n-1)
// took the slot in that order; call it once every waiter is done.
func (o *turnOrder) check(t *testing.T, n int) {
	t.Helper()
	close(o.errs)
	for err := range o.errs {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("node-%d", i))
	}
	if !reflect.DeepEqual(o.got, want) {
		t.Errorf("slots taken in the order %v, want %v", o.got, want)
	}
}
