package controller

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/controller/rollout"
	"github.com/nodeconfd/nodeconfd/names"
	nodepools "github.com/nodeconfd/nodeconfd/phases/pools"
	"github.com/nodeconfd/nodeconfd/phases/render"
	"github.com/nodeconfd/nodeconfd/phases/window"
)

// The pool's own settings, as annotations on the MachineConfigPool (the
// upstream type has no fields for them).
const (
	// SoakAnnotation is how long the pool waits after a node finished its
	// update before the next node is handed the config (a Go duration,
	// whole seconds, e.g. "10m").
	SoakAnnotation = "nodeconfd.io/soak-time"
	// WindowsAnnotation holds the pool's maintenance windows, one a line
	// (DAYS START-END ZONE, as --maintenance-window): no node of the pool
	// is handed a config outside them.
	WindowsAnnotation = "nodeconfd.io/maintenance-windows"
	// SLOAnnotation holds the pool's service-level queries, one a line
	// (EXPRESSION OP NUMBER, rollout.ParseSLOs), asked of Prometheus while
	// a node soaks (it needs the soak time and --prometheus-url).
	SLOAnnotation = "nodeconfd.io/slo-queries"
	// BreachActionAnnotation is what a breach does besides stopping the
	// rollout: rollback (the default: the node goes back to the pool's
	// previous config) or stop.
	BreachActionAnnotation = "nodeconfd.io/slo-breach-action"
)

// settings are the pool's soak time, windows and SLO gate.
type settings struct {
	soak         time.Duration
	windows      window.Windows
	slos         []rollout.SLO
	breachAction string
}

// poolSettings reads the pool's settings; a malformed one names the pool and
// the annotation.
func poolSettings(pool *mcfgv1.MachineConfigPool) (settings, error) {
	var s settings
	if v, ok := pool.Annotations[SoakAnnotation]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d%time.Second != 0 {
			return s, fmt.Errorf("MachineConfigPool %s: metadata.annotations[%s]: %q is not a duration of whole seconds "+
				"(e.g. 10m)", pool.Name, SoakAnnotation, v)
		}
		s.soak = d
	}
	if v, ok := pool.Annotations[WindowsAnnotation]; ok {
		ws, err := window.ParseList(v)
		if err != nil {
			return s, fmt.Errorf("MachineConfigPool %s: metadata.annotations[%s]: %v", pool.Name, WindowsAnnotation, err)
		}
		s.windows = ws
	}
	return sloSettings(pool, s)
}

// sloSettings reads the SLO gate's annotations into s.
func sloSettings(pool *mcfgv1.MachineConfigPool, s settings) (settings, error) {
	if v, ok := pool.Annotations[SLOAnnotation]; ok {
		slos, err := rollout.ParseSLOs(v)
		if err != nil {
			return s, fmt.Errorf("MachineConfigPool %s: metadata.annotations[%s]: %v", pool.Name, SLOAnnotation, err)
		}
		if len(slos) > 0 && s.soak == 0 {
			return s, fmt.Errorf("MachineConfigPool %s: metadata.annotations[%s]: the queries are asked during a node's soak: "+
				"set %s too", pool.Name, SLOAnnotation, SoakAnnotation)
		}
		s.slos = slos
	}
	s.breachAction = rollout.BreachRollback
	if v, ok := pool.Annotations[BreachActionAnnotation]; ok {
		if v != rollout.BreachRollback && v != rollout.BreachStop {
			return s, fmt.Errorf("MachineConfigPool %s: metadata.annotations[%s]: %q, want rollback or stop", pool.Name,
				BreachActionAnnotation, v)
		}
		s.breachAction = v
	}
	return s, nil
}

// render merges the MachineConfigs the pool selects. The result is kept
// per pool and reused while neither the selector nor any MachineConfig
// changed (the key lists every config's name and resourceVersion): most
// reconciles come from nodes' status changes, and rendering is the
// costliest part of one.
func (c *Controller) render(pool *mcfgv1.MachineConfigPool) (render.Result, error) {
	var all []*mcfgv1.MachineConfig
	for _, o := range c.configs.GetStore().List() {
		all = append(all, o.(*mcfgv1.MachineConfig))
	}
	// The store's order is a map's: sort for the merge's stable order of
	// equal names (render sorts by name itself) and for the key.
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	key := renderKey(pool, all)
	c.mu.Lock()
	memo, ok := c.renders[pool.Name]
	c.mu.Unlock()
	if ok && memo.key == key {
		return memo.res, memo.err
	}
	res, err := c.renderConfigs(pool, all)
	c.mu.Lock()
	c.renders[pool.Name] = renderMemo{key: key, res: res, err: err}
	c.mu.Unlock()
	return res, err
}

func (c *Controller) renderConfigs(pool *mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfig) (render.Result, error) {
	selected, err := render.Select(pool.Name, pool.Spec.MachineConfigSelector, all)
	if err != nil {
		return render.Result{}, fmt.Errorf("MachineConfigPool %s: spec.machineConfigSelector: %w", pool.Name, err)
	}
	return render.Render(pool.Name, selected, c.Render)
}

// renderMemo is a pool's last rendering and what it was rendered from.
type renderMemo struct {
	key string
	res render.Result
	err error
}

// renderKey names a rendering's inputs: the pool's selector and every
// MachineConfig's name and resourceVersion (any change of a config changes
// its resourceVersion).
func renderKey(pool *mcfgv1.MachineConfigPool, sorted []*mcfgv1.MachineConfig) string {
	var b strings.Builder
	sel, _ := json.Marshal(pool.Spec.MachineConfigSelector)
	b.Write(sel)
	for _, mc := range sorted {
		b.WriteString("\x00" + mc.Name + "\x00" + mc.ResourceVersion)
	}
	return b.String()
}

// poolNodes are the nodes whose pool this is, as the cache has them with
// the configs this controller handed and the cache has not shown yet.
func (c *Controller) poolNodes(pool *mcfgv1.MachineConfigPool, log *zap.Logger) []*corev1.Node {
	var pools []*mcfgv1.MachineConfigPool
	for _, o := range c.pools.GetStore().List() {
		pools = append(pools, o.(*mcfgv1.MachineConfigPool))
	}
	members := nodepools.NewMembership(pools)
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*corev1.Node
	for _, o := range c.nodes.GetStore().List() {
		n := o.(*corev1.Node)
		p, err := members.For(n)
		if err != nil {
			if c.unpooled[n.Name] != err.Error() {
				c.unpooled[n.Name] = err.Error()
				log.Info("Node is in no single pool; no pool hands it a config", zap.String("node", n.Name), zap.Error(err))
			}
			continue
		}
		delete(c.unpooled, n.Name)
		if p == nil || p.Name != pool.Name {
			continue
		}
		n = c.withHandoff(n)
		out = append(out, n)
	}
	for name := range c.handed { // nodes deleted since
		if _, ok, _ := c.nodes.GetStore().GetByKey(name); !ok {
			delete(c.handed, name)
		}
	}
	for name := range c.unpooled {
		if _, ok, _ := c.nodes.GetStore().GetByKey(name); !ok {
			delete(c.unpooled, name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// handoff is a config this controller gave a node, and the node's
// resourceVersion the handoff's patch required.
type handoff struct{ config, before string }

// withHandoff is n as the cache has it, or, while the cache still shows
// the version the handoff's patch replaced, with the handed config. The
// patch required that version, so any other version in the cache is the
// patch's or a later one: the entry is then dropped, whatever the node
// says now (someone may have changed it since). c.mu is held.
func (c *Controller) withHandoff(n *corev1.Node) *corev1.Node {
	h, ok := c.handed[n.Name]
	if !ok {
		return n
	}
	if n.ResourceVersion != h.before {
		delete(c.handed, n.Name)
		return n
	}
	n = n.DeepCopy()
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[names.DesiredConfig] = h.config
	return n
}

// machineConfigNodes are the cache's MachineConfigNodes by name.
func (c *Controller) machineConfigNodes() map[string]*mcfgv1.MachineConfigNode {
	out := map[string]*mcfgv1.MachineConfigNode{}
	for _, o := range c.mcns.GetStore().List() {
		m := o.(*mcfgv1.MachineConfigNode)
		out[m.Name] = m
	}
	return out
}
