package controller

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// A kept rendering is reused only while its inputs are the same: any
// MachineConfig added, removed or changed (its resourceVersion), or the
// pool's selector changed, gives another key.
func TestRenderKey(t *testing.T) {
	pool := func(role string) *mcfgv1.MachineConfigPool {
		return &mcfgv1.MachineConfigPool{Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": role}}}}
	}
	mc := func(name, rv string) *mcfgv1.MachineConfig {
		return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}
	base := renderKey(pool("worker"), []*mcfgv1.MachineConfig{mc("a", "1"), mc("b", "2")})
	if got := renderKey(pool("worker"), []*mcfgv1.MachineConfig{mc("a", "1"), mc("b", "2")}); got != base {
		t.Error("the same inputs gave another key")
	}
	for name, key := range map[string]string{
		"a config changed":   renderKey(pool("worker"), []*mcfgv1.MachineConfig{mc("a", "3"), mc("b", "2")}),
		"a config added":     renderKey(pool("worker"), []*mcfgv1.MachineConfig{mc("a", "1"), mc("b", "2"), mc("c", "4")}),
		"a config removed":   renderKey(pool("worker"), []*mcfgv1.MachineConfig{mc("a", "1")}),
		"selector changed":   renderKey(pool("infra"), []*mcfgv1.MachineConfig{mc("a", "1"), mc("b", "2")}),
		"names run together": renderKey(pool("worker"), []*mcfgv1.MachineConfig{mc("a1", ""), mc("b", "2")}),
	} {
		if key == base {
			t.Errorf("%s: the same key", name)
		}
	}
}

// A handoff counts until the cache shows any other version of the node
// than the one its patch replaced: then the cache is at the patch or later
// (the patch required that version), and the entry goes, even when the
// node shows another config by then.
func TestWithHandoff(t *testing.T) {
	c := &Controller{handed: map[string]handoff{"n": {config: "rendered-worker-b", before: "10"}}}
	node := func(rv, desired string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: rv,
			Annotations: map[string]string{"machineconfiguration.openshift.io/desiredConfig": desired}}}
	}
	if got := c.withHandoff(node("10", "rendered-worker-a")); got.Annotations["machineconfiguration.openshift.io/desiredConfig"] != "rendered-worker-b" {
		t.Fatalf("before the cache caught up: %v", got.Annotations)
	}
	if _, ok := c.handed["n"]; !ok {
		t.Fatal("the entry went before the cache caught up")
	}
	// A relist that skipped the patch's version and shows a later change.
	if got := c.withHandoff(node("12", "rendered-worker-c")); got.Annotations["machineconfiguration.openshift.io/desiredConfig"] != "rendered-worker-c" {
		t.Fatalf("after: %v", got.Annotations)
	}
	if _, ok := c.handed["n"]; ok {
		t.Fatal("the entry stayed after the cache moved past the patch")
	}
}

// A node that two pools select is in neither; every reconcile of every
// pool meets it, and the log says so once, again only when why changes.
func TestUnpooledLoggedOnce(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	c := &Controller{handed: map[string]handoff{}, unpooled: map[string]string{},
		pools: bare(&mcfgv1.MachineConfigPool{}), nodes: bare(&corev1.Node{})}
	for _, name := range []string{"gpu", "infra"} {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}}
		add(t, c.pools, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: sel}})
	}
	add(t, c.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{
		"node-role.kubernetes.io/gpu": "", "node-role.kubernetes.io/infra": ""}}})
	for range 3 {
		for _, o := range c.pools.GetStore().List() {
			if got := c.poolNodes(o.(*mcfgv1.MachineConfigPool), zap.New(core)); len(got) != 0 {
				t.Fatalf("a node in two pools counted in one: %v", got)
			}
		}
	}
	if n := logs.FilterMessageSnippet("no single pool").Len(); n != 1 {
		t.Fatalf("logged %d times, want once", n)
	}
	// Out of one pool: it is the other's, and forgotten.
	add(t, c.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{
		"node-role.kubernetes.io/infra": ""}}})
	obj, _, _ := c.pools.GetStore().GetByKey("infra")
	if got := c.poolNodes(obj.(*mcfgv1.MachineConfigPool), zap.New(core)); len(got) != 1 {
		t.Fatalf("the infra pool's nodes: %v", got)
	}
	if len(c.unpooled) != 0 {
		t.Fatalf("still remembered: %v", c.unpooled)
	}
}

// bare is an informer never started: its store is filled by hand.
func bare(obj runtime.Object) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(&cache.ListWatch{}, obj, 0, cache.Indexers{})
}

func add(t *testing.T, inf cache.SharedIndexInformer, obj any) {
	t.Helper()
	if err := inf.GetStore().Update(obj); err != nil {
		t.Fatal(err)
	}
}
