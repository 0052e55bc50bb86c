package leader_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/controller/leader"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// cut is a Leases client that a test can cut off from the API server, as a
// partition or a frozen process would be.
type cut struct {
	kubeapi.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
	off atomic.Bool
	// hang makes every request hang until its context ends, as a
	// partition that drops packets does.
	hang atomic.Bool
}

var errCut = errors.New("cut off")

func (c *cut) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if c.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if c.off.Load() {
		return nil, errCut
	}
	return c.Resource.Get(ctx, name, o)
}

func (c *cut) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if c.off.Load() {
		return nil, errCut
	}
	return c.Resource.Update(ctx, l, o)
}

func (c *cut) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if c.off.Load() {
		return nil, errCut
	}
	return c.Resource.Create(ctx, l, o)
}

func (c *cut) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*coordinationv1.Lease, error) {
	return nil, errors.New("not used")
}

func (c *cut) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, errors.New("not used")
}

// leads records who leads when, to check that no two ever overlap.
type leads struct {
	mu      sync.Mutex
	current string
	log     []string
	overlap bool
}

func (l *leads) start(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current != "" {
		l.overlap = true
	}
	l.current = id
	l.log = append(l.log, id)
}

func (l *leads) stop(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current == id {
		l.current = ""
	}
}

func (l *leads) leader() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current
}

// Three candidates on a real API server: one leads at a time; a leader
// that stops gives the Lease up and another takes over at once; a leader
// cut off from the API server stops leading within the renew deadline,
// before another takes over (which waits the lease duration on its own
// clock), so two never lead at once.
func TestElectionOnAPIServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (the test bed's control plane)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir(), Log: controlplane.TestLog{T: t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	api, err := kubeapi.NewAPI(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	var l leads
	clients := map[string]*cut{}
	cancels := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b", "c"} {
		c := &cut{Resource: api.Leases("default")}
		clients[id] = c
		cctx, ccancel := context.WithCancel(ctx)
		cancels[id] = ccancel
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = leader.Run(cctx, leader.Config{Leases: c, Namespace: "default", Name: "test", Identity: id,
				LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
				Log: zaptest.NewLogger(t)}, func(lctx context.Context) {
				l.start(id)
				<-lctx.Done()
				l.stop(id)
			})
		}()
	}
	first := waitLeader(t, &l, "")
	// A leader that stops (SIGTERM) gives the Lease up: another leads
	// within a few retry periods, not a lease duration.
	stopped := time.Now()
	cancels[first]()
	second := waitLeader(t, &l, first)
	if d := time.Since(stopped); d > 3*time.Second {
		t.Errorf("takeover after a release took %s", d)
	}
	// A leader cut off (a partition where requests hang) stops by itself
	// within the renew deadline, however long its requests hang; the last
	// one takes over after the lease duration.
	clients[second].hang.Store(true)
	third := waitLeader(t, &l, second)
	if third == first || third == second {
		t.Fatalf("leader %q after %q and %q", third, first, second)
	}
	cancel()
	wg.Wait()
	if l.overlap {
		t.Fatalf("two candidates led at once: %v", l.log)
	}
	got, err := api.Leases("default").Get(context.Background(), "test", metav1.GetOptions{})
	if err == nil && got.Spec.LeaseTransitions != nil && *got.Spec.LeaseTransitions < 2 {
		t.Errorf("lease transitions %d, want at least 2", *got.Spec.LeaseTransitions)
	}
}

// waitLeader waits for a leader other than not and returns it.
func waitLeader(t *testing.T, l *leads, not string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if id := l.leader(); id != "" && id != not {
			return id
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no leader other than %q within 30s", not)
	return ""
}
