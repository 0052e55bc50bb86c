package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/controller/rollout"
	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/render"
)

// Reconcile brings one pool to what its MachineConfigs and nodes call for:
// the rendered config exists and is the pool's configuration, the nodes the
// rollout lets go next are handed it, and the status says where the pool
// is. A pool whose config cannot be rendered, or whose settings are
// malformed, hands nothing out (RenderDegraded names the object and field).
func (c *Controller) Reconcile(ctx context.Context, name string) (Result, error) {
	obj, ok, err := c.pools.GetStore().GetByKey(name)
	if err != nil || !ok {
		if err == nil {
			c.Metrics.poolGone(name)
		}
		return Result{}, err
	}
	pool := obj.(*mcfgv1.MachineConfigPool).DeepCopy()
	log := c.Log.With(zap.String("pool", name))
	stopErr, err := c.renderPool(ctx, pool, log)
	if err != nil {
		return Result{}, err // an API write failed: the queue retries with backoff
	}
	settings, err := poolSettings(pool)
	if stopErr == nil {
		stopErr = err
	}
	in := rollout.Input{Pool: pool, Target: pool.Spec.Configuration.Name, Nodes: c.poolNodes(pool, log),
		MCNs: c.machineConfigNodes(), Now: c.Now(), Soak: settings.soak, Windows: settings.windows,
		DeferNode: c.OwnNode, BreachAction: settings.breachAction, Previous: pool.Status.Configuration.Name,
		DrainBlocked: c.drainForecast(ctx, log)}
	var d rollout.Decision
	if stopErr == nil && in.Target != "" {
		var soaking bool
		in.Breach, in.SLOHold, soaking = c.checkSLOs(ctx, in, settings.slos, log)
		d = rollout.Next(in)
		if soaking && (d.RequeueAfter == 0 || d.RequeueAfter > rollout.SLOEvery) {
			d.RequeueAfter = rollout.SLOEvery // the queries are asked again while the soak lasts
		}
		if err := c.rollBack(ctx, pool, d.Rollback, in, log); err != nil {
			return Result{}, err
		}
		for _, node := range d.Hand {
			if err := c.hand(ctx, pool, node, in.Target, log); err != nil {
				return Result{}, err
			}
		}
		if err := c.answerReboots(ctx, pool, d, log); err != nil {
			return Result{}, err
		}
		if len(d.Hand)+len(d.Grant)+len(d.Revoke)+len(d.Rollback) > 0 {
			in.Nodes = c.poolNodes(pool, log)
		} else if d.Waiting != "" {
			log.Debug("Rollout waits", zap.String("config", in.Target), zap.String("why", d.Waiting))
		}
	}
	st := rollout.Status(in, stopErr)
	c.Metrics.poolStatus(name, st)
	if err := c.writeStatus(ctx, pool, st); err != nil {
		return Result{}, err
	}
	c.pruneRendered(ctx, pool, log)
	return Result{RequeueAfter: d.RequeueAfter}, nil
}

// renderPool renders the pool's MachineConfigs, creates the rendered config
// once and makes it the pool's spec.configuration. A refusal (the
// fragments do not render, a rendered config of that name has other
// contents) stops the pool: RenderDegraded says it. A failed API request is
// err, for the queue to retry; it says nothing about the pool's config.
func (c *Controller) renderPool(ctx context.Context, pool *mcfgv1.MachineConfigPool, log *zap.Logger) (refused, err error) {
	res, refused := c.render(pool)
	if refused == nil {
		refused, err = c.ensureRendered(ctx, pool, res.Config, log)
	}
	if refused != nil || err != nil {
		if refused != nil && !reported(pool, refused) && !unconfigured(pool, refused) {
			log.Info("Cannot render the pool's config; its rollout stops", zap.Error(refused))
			c.Metrics.renderFailed(pool.Name)
		}
		return refused, err
	}
	mc := res.Config
	want := mcfgv1.MachineConfigPoolStatusConfiguration{
		ObjectReference: corev1.ObjectReference{Name: mc.Name}, Source: res.Sources}
	if reflect.DeepEqual(pool.Spec.Configuration, want) {
		return nil, nil
	}
	// The pool as this reconcile read it, or nothing: a pool paused since
	// (an administrator who pauses, then applies a fragment) fails the
	// patch with a conflict, and the queue decides again from the pool as
	// it is, instead of handing out the new config from a stale cache.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": pool.ResourceVersion},
		"spec": map[string]any{"configuration": want}})
	if err != nil {
		return nil, fmt.Errorf("encoding the configuration of MachineConfigPool %s: %w", pool.Name, err)
	}
	updated, err := c.API.MachineConfigPools().Patch(ctx, pool.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting MachineConfigPool %s spec.configuration to %s: %w", pool.Name, mc.Name, err)
	}
	if pool.Spec.Configuration.Name != mc.Name {
		log.Info("Pool has a new rendered config", zap.String("config", mc.Name),
			zap.String("previous", pool.Spec.Configuration.Name), zap.Int("sources", len(res.Sources)))
		c.event(pool, false, "RenderedConfig", fmt.Sprintf("Rendered %s from %d MachineConfigs", mc.Name, len(res.Sources)))
	}
	pool.Spec.Configuration, pool.ResourceVersion, pool.Generation = want, updated.ResourceVersion, updated.Generation
	return nil, nil
}

// unconfigured reports whether the pool never had a config and selects no
// MachineConfig: nothing to render, which its status says (rollout.Status),
// not a failure to log at every reconcile.
func unconfigured(pool *mcfgv1.MachineConfigPool, err error) bool {
	return pool.Spec.Configuration.Name == "" && errors.Is(err, render.ErrNothingSelected)
}

// reported says whether the pool's status already shows err, so that a
// refusal is logged once, not at every reconcile.
func reported(pool *mcfgv1.MachineConfigPool, err error) bool {
	for _, c := range pool.Status.Conditions {
		if c.Type == mcfgv1.MachineConfigPoolRenderDegraded {
			return c.Status == corev1.ConditionTrue && strings.Contains(c.Message, err.Error())
		}
	}
	return false
}

// ensureRendered creates the rendered config unless it exists. One that
// exists and is not this pool's (other contents, not created by this
// controller for this pool, labelled or held by a finalizer) is never
// rolled out nor overwritten: nodes may run it; the pool stops, naming it
// (refused), until it is deleted.
func (c *Controller) ensureRendered(ctx context.Context, pool *mcfgv1.MachineConfigPool, mc *mcfgv1.MachineConfig,
	log *zap.Logger) (refused, err error) {
	if obj, ok, _ := c.configs.GetStore().GetByKey(mc.Name); ok {
		return sameRendered(obj.(*mcfgv1.MachineConfig), mc, pool), nil
	}
	mc = mc.DeepCopy()
	mc.OwnerReferences = renderedOwner(pool)
	_, err = c.API.MachineConfigs().Create(ctx, mc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err := c.API.MachineConfigs().Get(ctx, mc.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading MachineConfig %s: %w", mc.Name, err)
		}
		return sameRendered(got, mc, pool), nil
	}
	if err != nil {
		return nil, fmt.Errorf("creating MachineConfig %s: %w", mc.Name, err)
	}
	log.Info("Created the rendered config", zap.String("config", mc.Name))
	return nil, nil
}

// renderedOwner is the owner reference of a pool's rendered config: the
// pool, as its controller. With the name rendered-<pool>-<hash> it is the
// marker of the configs this controller created, the only ones it ever
// deletes (prune.CreatedBy, and the admission policy nodeconfd-controller).
func renderedOwner(pool *mcfgv1.MachineConfigPool) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool",
		Name: pool.Name, UID: pool.UID, Controller: &yes}}
}

// sameRendered refuses a rendered config of the right name that is not
// the one this controller would create for the pool: other contents, or
// not the pool's own (its controlling owner another object, or the pool
// as it was before it was deleted and made again), labelled (a pool could
// select it as a fragment) or held by a finalizer. Anyone who may create
// MachineConfigs can make such a config before the controller does; the
// pool then stops, saying so, rather than hand out a config that is not
// its render. Upstream's render controller overwrites it
// (resourceapply.ApplyMachineConfig); this controller may not change a
// MachineConfig at all (docs/security.md).
func sameRendered(have, want *mcfgv1.MachineConfig, pool *mcfgv1.MachineConfigPool) error {
	a, _ := json.Marshal(have.Spec)
	b, _ := json.Marshal(want.Spec)
	why := ""
	switch ref := metav1.GetControllerOfNoCopy(have); {
	case string(a) != string(b):
		why = "spec: exists with other contents than the pool's MachineConfigs render to"
	case ref == nil || ref.Kind != "MachineConfigPool" || ref.Name != pool.Name || ref.UID != pool.UID:
		why = "metadata.ownerReferences: exists, but was not created by the controller for this pool"
	case len(have.Labels) > 0:
		why = "metadata.labels: exists with labels, which the controller's rendered configs never have"
	case len(have.Finalizers) > 0:
		why = "metadata.finalizers: exists with finalizers, which the controller's rendered configs never have"
	default:
		return nil
	}
	return fmt.Errorf("MachineConfig %s: %s (rendered configs are never changed and this one is not rolled out; "+
		"delete it if no node runs it, and the controller creates it again)", have.Name, why)
}

// hand gives node the config by its desiredConfig annotation. The patch
// carries the node's resourceVersion as seen in the cache: a node changed
// since (by its daemon or an administrator) fails it with a conflict and
// the pool is decided again from fresh data.
func (c *Controller) hand(ctx context.Context, pool *mcfgv1.MachineConfigPool, name, config string, log *zap.Logger) error {
	obj, ok, err := c.nodes.GetStore().GetByKey(name)
	if err != nil || !ok {
		return fmt.Errorf("node %s: not in the cache", name)
	}
	node := obj.(*corev1.Node)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": node.ResourceVersion,
		"annotations":     map[string]string{names.DesiredConfig: config}}})
	if err != nil {
		return fmt.Errorf("encoding node %s's desiredConfig: %w", name, err)
	}
	if _, err := c.API.Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting node %s's desiredConfig to %s: %w", name, config, err)
	}
	c.mu.Lock()
	c.handed[name] = handoff{config: config, before: node.ResourceVersion}
	c.mu.Unlock()
	c.Metrics.handedOff(pool.Name)
	log.Info("Handed a node the pool's config", zap.String("node", name), zap.String("config", config),
		zap.String("previous", node.Annotations[names.DesiredConfig]))
	c.event(pool, false, "SetDesiredConfig", fmt.Sprintf("Targeted node %s to MachineConfig %s", name, config))
	return nil
}

// writeStatus writes the pool's status when it changed.
func (c *Controller) writeStatus(ctx context.Context, pool *mcfgv1.MachineConfigPool, st mcfgv1.MachineConfigPoolStatus) error {
	st.ObservedGeneration = pool.Generation
	if reflect.DeepEqual(pool.Status, st) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return fmt.Errorf("encoding the status of MachineConfigPool %s: %w", pool.Name, err)
	}
	if _, err := c.API.MachineConfigPools().Patch(ctx, pool.Name, types.MergePatchType, patch, metav1.PatchOptions{},
		"status"); err != nil {
		return fmt.Errorf("writing the status of MachineConfigPool %s: %w", pool.Name, err)
	}
	return nil
}

func (c *Controller) event(pool *mcfgv1.MachineConfigPool, warning bool, reason, message string) {
	if c.Events == nil {
		return
	}
	c.Events.EventOn(corev1.ObjectReference{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool",
		Name: pool.Name, UID: pool.UID}, warning, reason, message)
}

// drainForecast is the rollout's view of the nodes' drain forecasts: a
// forecast that fails (the API server away) counts as a drain that could
// finish, the order the rollout had before forecasts.
func (c *Controller) drainForecast(ctx context.Context, log *zap.Logger) func(string) string {
	if c.DrainBlocked == nil {
		return nil
	}
	return func(node string) string {
		why, err := c.DrainBlocked(ctx, node)
		if err != nil {
			log.Debug("Cannot forecast a node's drain; it keeps its place in the rollout", zap.String("node", node), zap.Error(err))
			return ""
		}
		return why
	}
}
