// Package controller is `nodeconfd controller`: for each MachineConfigPool
// it renders the MachineConfigs the pool selects into the pool's rendered
// config (phases/render), hands that config to the pool's nodes a few at a
// time by their desiredConfig annotation (controller/rollout decides which
// and when), and writes the pool's status, as the upstream MCO's render and
// node controllers do. It is the only writer of desiredConfig.
//
// It is level-triggered in the shape of controller-runtime's Reconcile:
// Reconcile(ctx, pool) reads the world from the informers' caches, does
// what is missing, and is safe to run again at any time; the work queue owns
// retries and their backoff. Only the elected leader runs it
// (controller/leader).
package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	opv1 "github.com/openshift/api/operator/v1"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/cluster/surge"
	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/render"
)

// Controller renders and rolls out every pool.
type Controller struct {
	API kubeapi.API
	Log *zap.Logger
	// Render are the rendering's options (base OS image, the daemons' size
	// caps, the controller's version).
	Render render.Options
	// Events, when set, records the pools' Events (a config rendered, a
	// node handed it).
	Events *kubeapi.Events
	// OwnNode is the node this replica runs on, handed its pool's config
	// after the pool's other nodes.
	OwnNode string
	Now     func() time.Time
	// SLOs asks the pools' service-level queries (slo.go); nil without
	// --prometheus-url.
	SLOs SLOSource
	// DrainBlocked, when set, forecasts a node's drain: why it could not
	// finish now, "" when it could (drain.Drainer.WouldBlock). The rollout
	// hands its config to such nodes last.
	DrainBlocked func(ctx context.Context, node string) (string, error)
	// Surges, when set, answers the drains' surge requests (the slot
	// Leases of the daemons' namespace): the only writer of a surged
	// workload's replicas.
	Surges *surge.Granter
	// Retention is how many of each pool's unused rendered configs are
	// kept, the newest; the older ones are deleted (gc.go). 0 deletes
	// none.
	Retention int
	// Metrics, when set, counts the pools (metrics.go).
	Metrics *Metrics
	// synced is set once the leader's caches have synced (Synced).
	synced atomic.Bool

	pools, configs, nodes, mcns cache.SharedIndexInformer
	queue                       workqueue.TypedRateLimitingInterface[string]
	// mcfgs watches the MachineConfiguration named cluster, whose status
	// gets the merged node disruption policy (machineconfiguration.go);
	// nil when the API client has no such resource.
	mcfgs   cache.SharedIndexInformer
	mcfgRes kubeapi.Resource[*opv1.MachineConfiguration, *opv1.MachineConfigurationList]

	// handed are the nodes given a config whose change the node cache has
	// not shown yet: a reconcile right after a handoff must count them as
	// given, or it would hand a second node the first one's place.
	mu     sync.Mutex
	handed map[string]handoff
	// renders are the pools' last renderings (render).
	renders map[string]renderMemo
	// unpooled are the nodes in no single pool, with why, as last logged:
	// every reconcile of every pool meets them, and the log says it once.
	unpooled map[string]string
	// pruneFailed are the rendered configs whose delete failed, with the
	// error as last logged.
	pruneFailed map[string]string
}

// Result is what a reconcile asks of the queue: to look again after a
// time (a soak's end, a window's opening) even if nothing changes.
type Result struct{ RequeueAfter time.Duration }

// Run starts the caches and the workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if c.Now == nil {
		c.Now = time.Now
	}
	c.handed, c.renders, c.unpooled = map[string]handoff{}, map[string]renderMemo{}, map[string]string{}
	c.pruneFailed = map[string]string{}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "pools"})
	defer c.queue.ShutDown()
	c.pools = informer(c.API.MachineConfigPools(), &mcfgv1.MachineConfigPool{})
	c.configs = informer(c.API.MachineConfigs(), &mcfgv1.MachineConfig{})
	c.nodes = informer(c.API.Nodes(), &corev1.Node{})
	c.mcns = informer(c.API.MachineConfigNodes(), &mcfgv1.MachineConfigNode{})
	for _, inf := range []cache.SharedIndexInformer{c.pools, c.configs, c.nodes, c.mcns} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.enqueueAll() },
			UpdateFunc: func(any, any) { c.enqueueAll() },
			DeleteFunc: func(any) { c.enqueueAll() },
		}); err != nil {
			return fmt.Errorf("watching: %w", err)
		}
		go inf.RunWithContext(ctx)
	}
	if err := c.watchMachineConfiguration(ctx); err != nil {
		return err
	}
	if c.Surges != nil {
		go func() {
			if err := c.Surges.Run(ctx, c.nodes); err != nil && ctx.Err() == nil {
				c.Log.Warn("Surge requests no longer answered", zap.Error(err))
			}
		}()
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.pools.HasSynced, c.configs.HasSynced, c.nodes.HasSynced, c.mcns.HasSynced) {
		return ctx.Err()
	}
	c.synced.Store(true)
	defer c.synced.Store(false)
	c.Log.Info("Caches synced; reconciling pools", zap.Int("workers", workers))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// Synced reports whether Run's caches have synced and it reconciles.
func (c *Controller) Synced() bool { return c.synced.Load() }

// watchMachineConfiguration watches the MachineConfiguration named cluster
// (a list and watch by name, which RBAC grants by resourceNames); each of
// its changes queues its own key. The pools do not wait for its cache: a
// cluster without the resource (no CRD) still rolls out, and the watch
// keeps trying.
func (c *Controller) watchMachineConfiguration(ctx context.Context) error {
	res, err := kubeapi.MachineConfigurations(c.API)
	if err != nil {
		c.Log.Info("Not writing the node disruption policy's status", zap.Error(err))
		return nil
	}
	c.mcfgRes = res
	c.mcfgs = informerByName(res, &opv1.MachineConfiguration{}, names.MachineConfigurationName)
	if _, err := c.mcfgs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.queue.Add(machineConfigurationKey) },
		UpdateFunc: func(any, any) { c.queue.Add(machineConfigurationKey) },
	}); err != nil {
		return fmt.Errorf("watching %s: %w", machineConfiguration, err)
	}
	go c.mcfgs.RunWithContext(ctx)
	return nil
}

// enqueueAll queues every pool. Pools are few (a handful per cluster) and
// any object may change any pool's decision (a node's readiness counts
// against its pool's bound; a MachineConfig may be selected by several
// pools), so every change reconciles them all; the queue merges repeats.
func (c *Controller) enqueueAll() {
	for _, p := range c.pools.GetStore().List() {
		c.queue.Add(p.(*mcfgv1.MachineConfigPool).Name)
	}
}

// next processes one key from the queue (a pool, or the MachineConfiguration);
// false once the queue shut down.
func (c *Controller) next(ctx context.Context) bool {
	pool, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(pool)
	var res Result
	var err error
	if pool == machineConfigurationKey {
		res, err = c.ReconcileMachineConfiguration(ctx)
	} else {
		res, err = c.Reconcile(ctx, pool)
	}
	switch {
	case err != nil && ctx.Err() == nil:
		c.Log.Info("Reconcile failed; retrying with backoff", zap.String("key", pool), zap.Error(err))
		c.queue.AddRateLimited(pool)
	case res.RequeueAfter > 0:
		c.queue.Forget(pool)
		c.queue.AddAfter(pool, res.RequeueAfter)
	default:
		c.queue.Forget(pool)
	}
	return true
}

// informer is a shared informer over one of kubeapi.API's resources.
func informer[T runtime.Object, L runtime.Object](r kubeapi.Resource[T, L], obj runtime.Object) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return r.List(ctx, o)
		},
		WatchFuncWithContext: r.Watch,
	}
	return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
}

// informerByName is an informer over the one object of r named name.
func informerByName[T runtime.Object, L runtime.Object](r kubeapi.Resource[T, L], obj runtime.Object, name string) cache.SharedIndexInformer {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return r.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return r.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
}
