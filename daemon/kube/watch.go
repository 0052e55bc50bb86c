package kube

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Watch watches the daemon's own Node and own MachineConfigNode (one
// list+watch each, filtered by name) and the cluster's MachineConfigPools
// (a handful of small objects: which pool the node is in, Pool), and
// signals every change that matters to the loop.
type Watch struct {
	Client  *Client
	changes chan struct{}
	node    cache.SharedIndexInformer
	mcn     cache.SharedIndexInformer
	pools   cache.SharedIndexInformer

	// written is the Node as this daemon's own last write returned it,
	// kept until the watch shows that version or a later one (Node).
	mu      sync.Mutex
	written *corev1.Node
}

// NewWatch prepares the watches of c's node.
func NewWatch(c *Client) *Watch {
	nodes := c.API.Nodes()
	mcns := c.API.MachineConfigNodes()
	w := &Watch{Client: c, changes: make(chan struct{}, 1)}
	c.nodeWritten = w.wrote
	w.node = cache.NewSharedIndexInformer(byName(c.NodeName, c.Retry(), nodes), &corev1.Node{}, 0,
		cache.Indexers{})
	w.mcn = cache.NewSharedIndexInformer(byName(c.NodeName, c.Retry(), mcns),
		&mcfgv1.MachineConfigNode{}, 0, cache.Indexers{})
	w.pools = cache.NewSharedIndexInformer(listWatch("", c.Retry(), c.API.MachineConfigPools()),
		&mcfgv1.MachineConfigPool{}, 0, cache.Indexers{})
	return w
}

// watchTimeout is the timeout of each watch: in [30, 60) minutes, what the
// API server gives a watch that names none, rather than client-go's 5 to 10
// minutes. Each renewal of a watch is a request; a fleet of 5,000 daemons
// renewing two watches every 7.5 minutes on average would send 22
// requests a second while idle, every 45 minutes 3.7.
func watchTimeout() *int64 {
	s := int64(30*60 + rand.IntN(30*60))
	return &s
}

// byName is a list+watch of the one object with the given name (listWatch).
func byName[T kubeapi.Object, L runtime.Object](name string, retry Retry, res kubeapi.Resource[T, L]) *cache.ListWatch {
	return listWatch(fields.OneTermEqualSelector("metadata.name", name).String(), retry, res)
}

// listWatch is a list+watch of the objects the field selector selects
// (all for ""), through res's single attempts (kubeapi.AttemptsOf). After a failed
// list or watch (the API server gone, or refusing while it starts) the next
// attempt waits as retry says first (see reconnect.go).
func listWatch[T kubeapi.Object, L runtime.Object](selector string, retry Retry, res kubeapi.Resource[T, L]) *cache.ListWatch {
	list, watchFn := kubeapi.AttemptsOf(res)
	r := newReconnect(retry)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if err := r.before(ctx); err != nil {
				return nil, err
			}
			if selector != "" {
				o.FieldSelector = selector
			}
			l, err := list(ctx, o)
			r.after(err, 0)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if err := r.before(ctx); err != nil {
				return nil, err
			}
			if selector != "" {
				o.FieldSelector = selector
			}
			o.TimeoutSeconds = watchTimeout()
			w, err := watchFn(ctx, o)
			r.after(err, kubeapi.ListTimeout(o))
			return w, err
		},
	}
}

// Start starts both watches and waits for their first lists.
func (w *Watch) Start(ctx context.Context) error {
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.signal() },
		UpdateFunc: func(_, _ any) { w.signal() },
		DeleteFunc: func(any) { w.signal() },
	}
	if _, err := w.node.AddEventHandler(notify); err != nil {
		return err
	}
	if _, err := w.mcn.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// Our own status writes change the MCN too; only a change of its
		// spec (generation) or its deletion needs the loop.
		UpdateFunc: func(o, n any) {
			if o.(*mcfgv1.MachineConfigNode).Generation != n.(*mcfgv1.MachineConfigNode).Generation {
				w.signal()
			}
		},
		DeleteFunc: func(any) { w.signal() },
	}); err != nil {
		return err
	}
	if _, err := w.pools.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// The controller writes the pools' status at every rollout step;
		// only a new pool, a spec change (a nodeSelector: the node may be
		// in another pool now) or a deletion can change the node's pool.
		AddFunc: func(any) { w.signal() },
		UpdateFunc: func(o, n any) {
			if o.(*mcfgv1.MachineConfigPool).Generation != n.(*mcfgv1.MachineConfigPool).Generation {
				w.signal()
			}
		},
		DeleteFunc: func(any) { w.signal() },
	}); err != nil {
		return err
	}
	go w.node.RunWithContext(ctx)
	go w.mcn.RunWithContext(ctx)
	go w.pools.RunWithContext(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), w.node.HasSynced, w.mcn.HasSynced, w.pools.HasSynced) {
		return fmt.Errorf("waiting for the first list of node %s, its MachineConfigNode and the MachineConfigPools",
			w.Client.NodeName)
	}
	w.signal()
	return nil
}

func (w *Watch) signal() {
	select {
	case w.changes <- struct{}{}:
	default:
	}
}

// Changes fires (coalesced) after any change.
func (w *Watch) Changes() <-chan struct{} { return w.changes }

// Node returns the node as last seen: as the watch shows it, or as the
// daemon's own last write returned it while the watch lags behind that
// write. Without the latter, a pass that starts on a change signalled
// during the update (the uncordon's) would read the Node from before the
// update's own last write (currentConfig, state Done), take the update
// for unfinished, and run it again: a second cordon and drain of a node
// already done (seen once in a thousand in the fleet benchmark).
func (w *Watch) Node() (*corev1.Node, bool) {
	obj, ok, _ := w.node.GetStore().GetByKey(w.Client.NodeName)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !ok {
		w.written = nil
		return nil, false
	}
	n := obj.(*corev1.Node)
	if w.written != nil {
		if newer(w.written, n) {
			return w.written, true
		}
		w.written = nil
	}
	return n, true
}

// wrote keeps the Node a write of the daemon's returned.
func (w *Watch) wrote(n *corev1.Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written == nil || newer(n, w.written) {
		w.written = n
	}
}

// newer reports whether a is a later version of the object than b. A
// resourceVersion is opaque to clients, but the API server's are etcd's
// revisions, integers that grow (client-go's mutation cache reads them so
// too); one that is not an integer is never taken as newer, so the watch's
// version wins.
func newer(a, b *corev1.Node) bool {
	ra, errA := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, errB := strconv.ParseUint(b.ResourceVersion, 10, 64)
	return errA == nil && errB == nil && ra > rb
}

// MCN returns the MachineConfigNode as last seen.
func (w *Watch) MCN() (*mcfgv1.MachineConfigNode, bool) {
	obj, ok, _ := w.mcn.GetStore().GetByKey(w.Client.NodeName)
	if !ok {
		return nil, false
	}
	return obj.(*mcfgv1.MachineConfigNode).DeepCopy(), true
}

// Pools returns the cluster's MachineConfigPools as last seen.
func (w *Watch) Pools() []*mcfgv1.MachineConfigPool {
	var out []*mcfgv1.MachineConfigPool
	for _, o := range w.pools.GetStore().List() {
		out = append(out, o.(*mcfgv1.MachineConfigPool))
	}
	return out
}
