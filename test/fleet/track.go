package fleet

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeconfd/nodeconfd/phases/status"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// tracker follows every MachineConfigNode (one watch, as admin) and tells
// when nodes report Updated at a config.
type tracker struct {
	mu sync.Mutex
	// at is the config each node last reported Updated at, and when.
	at      map[string]updated
	waiters []*expectation
	// cordoned is when each node was last seen Cordoned=True since its
	// last Updated; held how long its last update held it disrupted
	// (cordoned to Updated).
	cordoned map[string]time.Time
	held     map[string]time.Duration
}

type updated struct {
	config string
	when   time.Time
}

type expectation struct {
	config string
	left   map[string]bool
	done   map[string]time.Time
	ch     chan struct{}
}

func startTracker(ctx context.Context, bed *testbed.Bed) (*tracker, error) {
	t := &tracker{at: map[string]updated{}, cordoned: map[string]time.Time{}, held: map[string]time.Duration{}}
	lw := cache.NewListWatchFromClient(bed.MCfg.MachineconfigurationV1().RESTClient(), "machineconfignodes", "",
		fields.Everything())
	if err := follow(ctx, lw, &mcfgv1.MachineConfigNode{}, t.saw); err != nil {
		return nil, err
	}
	return t, nil
}

// follow lists and watches every object of lw's kind (as admin), and
// calls saw with each as it is added or changed, until ctx's parent ends.
func follow(ctx context.Context, lw cache.ListerWatcher, obj runtime.Object, saw func(any)) error {
	inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    saw,
		UpdateFunc: func(_, o any) { saw(o) },
	}); err != nil {
		return err
	}
	go inf.RunWithContext(context.WithoutCancel(ctx))
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("listing the %T objects", obj)
	}
	return nil
}

func (t *tracker) saw(o any) {
	mcn, ok := o.(*mcfgv1.MachineConfigNode)
	if !ok || mcn.Status.ConfigVersion == nil {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := status.Find(mcn.Status.Conditions, status.Cordoned); c != nil && c.Status == metav1.ConditionTrue &&
		t.cordoned[mcn.Name].IsZero() {
		t.cordoned[mcn.Name] = now
	}
	c := status.Find(mcn.Status.Conditions, status.Updated)
	if c == nil || c.Status != metav1.ConditionTrue {
		return
	}
	cur := mcn.Status.ConfigVersion.Current
	if t.at[mcn.Name].config == cur {
		return
	}
	t.at[mcn.Name] = updated{config: cur, when: now}
	if at := t.cordoned[mcn.Name]; !at.IsZero() {
		t.held[mcn.Name] = now.Sub(at)
		delete(t.cordoned, mcn.Name)
	}
	for _, e := range t.waiters {
		if e.config == cur && e.left[mcn.Name] {
			delete(e.left, mcn.Name)
			e.done[mcn.Name] = now
			if len(e.left) == 0 {
				close(e.ch)
			}
		}
	}
}

// expect starts waiting for nodes to report Updated at config; the
// function returned waits for the last of them and returns when each did.
func (t *tracker) expect(nodes []string, config string) func(context.Context) (map[string]time.Time, error) {
	e := &expectation{config: config, left: map[string]bool{}, done: map[string]time.Time{}, ch: make(chan struct{})}
	t.mu.Lock()
	for _, n := range nodes {
		if u := t.at[n]; u.config == config {
			e.done[n] = u.when
		} else {
			e.left[n] = true
		}
	}
	if len(e.left) == 0 {
		close(e.ch)
	}
	t.waiters = append(t.waiters, e)
	t.mu.Unlock()
	return func(ctx context.Context) (map[string]time.Time, error) {
		select {
		case <-e.ch:
		case <-ctx.Done():
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if len(e.left) > 0 {
			var left []string
			for n := range e.left {
				left = append(left, n)
			}
			sort.Strings(left)
			if len(left) > 5 {
				left = append(left[:5], "...")
			}
			return nil, fmt.Errorf("%d nodes not Updated at %s: %s: %w", len(e.left), config, strings.Join(left, ", "), ctx.Err())
		}
		out := map[string]time.Time{}
		for n, at := range e.done {
			out[n] = at
		}
		return out, nil
	}
}

// holds returns how long each of nodes last held its node disrupted.
func (t *tracker) holds(nodes []string) []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []time.Duration
	for _, n := range nodes {
		if d, ok := t.held[n]; ok {
			out = append(out, d)
		}
	}
	return out
}
