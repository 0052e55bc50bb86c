package surge

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Run answers the slot Leases until ctx ends, one at a time (one worker:
// two requests for the same workload are decided one after the other).
// nodes is a Node informer to share (the controller's), or nil for one of
// its own; it runs it only when it made it.
func (g *Granter) Run(ctx context.Context, nodes cache.SharedIndexInformer) error {
	leases := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = NodeLabel
			return g.Client.Leases(g.Namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = NodeLabel
			return g.Client.Leases(g.Namespace).Watch(ctx, o)
		},
	}, &coordinationv1.Lease{}, 0, cache.Indexers{})
	if nodes == nil {
		nodes = cache.NewSharedIndexInformer(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return g.Client.Nodes().List(ctx, o)
			},
			WatchFuncWithContext: g.Client.Nodes().Watch,
		}, &corev1.Node{}, 0, cache.Indexers{})
		go nodes.RunWithContext(ctx)
	}
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "surges"})
	defer queue.ShutDown()
	onLease := func(obj any) {
		if l, ok := obj.(*coordinationv1.Lease); ok {
			queue.Add(l.Name)
		}
	}
	// A node's change (its cordon lifted) may end its surges.
	onNode := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		for _, o := range leases.GetStore().List() {
			if l := o.(*coordinationv1.Lease); l.Labels[NodeLabel] == n.Name {
				queue.Add(l.Name)
			}
		}
	}
	if _, err := leases.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onLease,
		UpdateFunc: func(_, o any) { onLease(o) }}); err != nil {
		return fmt.Errorf("watching the surge slots: %w", err)
	}
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onNode,
		UpdateFunc: func(_, o any) { onNode(o) }, DeleteFunc: onNode}); err != nil {
		return fmt.Errorf("watching the nodes for surges: %w", err)
	}
	go leases.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), leases.HasSynced, nodes.HasSynced) {
		return ctx.Err()
	}
	g.Log.Info("Answering surge requests", zap.String("namespace", g.Namespace))
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for g.next(ctx, queue, leases.GetStore(), nodes.GetStore()) {
	}
	return nil
}

// next decides one slot Lease from the queue; false once the queue shut
// down.
func (g *Granter) next(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], leases, nodes cache.Store) bool {
	name, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(name)
	obj, ok, _ := leases.GetByKey(g.Namespace + "/" + name)
	if !ok {
		queue.Forget(name)
		return true
	}
	l := obj.(*coordinationv1.Lease)
	var node *corev1.Node
	if n, ok, _ := nodes.GetByKey(l.Labels[NodeLabel]); ok {
		node = n.(*corev1.Node)
	}
	if err := g.Decide(ctx, l, node); err != nil && ctx.Err() == nil {
		g.Log.Info("Surge decision failed; retrying with backoff", zap.String("lease", name), zap.Error(err))
		queue.AddRateLimited(name)
		return true
	}
	queue.Forget(name)
	return true
}
