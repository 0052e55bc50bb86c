package controller

import (
	"context"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/controller/prune"
)

// pruneRendered deletes the pool's rendered configs that prune.Decide lets
// go, keeping the newest c.Retention unused ones (issue 40); Retention 0
// deletes nothing. It decides from the caches, with the pool as this
// reconcile left it (a spec.configuration just set counts before the cache
// shows it) and the nodes with the configs just handed them. Each delete
// carries the config's UID and resourceVersion as the cache saw them, so
// that a config changed or re-created since is never deleted. A delete
// that fails is logged (once per error) and tried again at a later
// reconcile: pruning never holds a pool's rollout.
func (c *Controller) pruneRendered(ctx context.Context, pool *mcfgv1.MachineConfigPool, log *zap.Logger) {
	if c.Retention <= 0 || ctx.Err() != nil {
		return
	}
	in := prune.Input{Keep: c.Retention, Pools: []*mcfgv1.MachineConfigPool{pool}}
	for _, o := range c.pools.GetStore().List() {
		in.Pools = append(in.Pools, o.(*mcfgv1.MachineConfigPool))
	}
	for _, o := range c.mcns.GetStore().List() {
		in.MCNs = append(in.MCNs, o.(*mcfgv1.MachineConfigNode))
	}
	for _, o := range c.configs.GetStore().List() {
		in.Configs = append(in.Configs, o.(*mcfgv1.MachineConfig))
	}
	c.mu.Lock()
	for _, o := range c.nodes.GetStore().List() {
		in.Nodes = append(in.Nodes, c.withHandoff(o.(*corev1.Node)))
	}
	c.mu.Unlock()
	for _, v := range prune.Decide(in) {
		if !v.Delete || v.Pool != pool.Name {
			continue
		}
		name, uid, rv := v.Config.Name, v.Config.UID, v.Config.ResourceVersion
		err := c.API.MachineConfigs().Delete(ctx, name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		switch {
		case err == nil:
			log.Info("Deleted an unused rendered config", zap.String("config", name), zap.String("why", v.Why))
		case apierrors.IsNotFound(err): // deleted already; the cache does not show it yet
		case apierrors.IsConflict(err):
			log.Debug("Rendered config changed since the cache saw it; not deleted", zap.String("config", name))
		default:
			c.mu.Lock()
			again := c.pruneFailed[name] == err.Error()
			c.pruneFailed[name] = err.Error()
			c.mu.Unlock()
			if !again {
				log.Warn("Cannot delete an unused rendered config; trying again later", zap.String("config", name),
					zap.Error(err))
			}
			continue
		}
		c.mu.Lock()
		delete(c.pruneFailed, name)
		c.mu.Unlock()
	}
}
