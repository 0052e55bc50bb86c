package prune

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/names"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// name is the rendered config name of pool with a hash of 32 times c.
func name(pool string, c byte) string {
	return "rendered-" + pool + "-" + strings.Repeat(string(c), 32)
}

// owned is a config as ensureRendered creates it, min minutes after t0.
func owned(n, pool string, min int) *mcfgv1.MachineConfig {
	yes := true
	return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: n,
		CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(min) * time.Minute)),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "machineconfiguration.openshift.io/v1",
			Kind: "MachineConfigPool", Name: pool, UID: "u-" + "pool", Controller: &yes}}}}
}

func withRefs(mc *mcfgv1.MachineConfig, refs ...metav1.OwnerReference) *mcfgv1.MachineConfig {
	mc.OwnerReferences = refs
	return mc
}

func mkPool(n, spec, status string) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: n}}
	p.Spec.Configuration.Name, p.Status.Configuration.Name = spec, status
	return p
}

func mkNode(n string, ann ...string) *corev1.Node {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Annotations: map[string]string{}}}
	for i := 0; i+1 < len(ann); i += 2 {
		node.Annotations[ann[i]] = ann[i+1]
	}
	return node
}

func mkMCN(n, specDesired string, status *mcfgv1.MachineConfigNodeStatusMachineConfigVersion) *mcfgv1.MachineConfigNode {
	m := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: n}}
	m.Spec.ConfigVersion.Desired = specDesired
	m.Status.ConfigVersion = status
	return m
}

var (
	w0, w1, w2, w3, w4 = name("worker", '0'), name("worker", '1'), name("worker", '2'), name("worker", '3'), name("worker", '4')
	w5, w6             = name("worker", '5'), name("worker", '6')
	m0, m1, m2         = name("master", '0'), name("master", '1'), name("master", '2')
)

func TestDecide(t *testing.T) {
	yes, no := true, false
	poolRef := func(n string, ctl *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfigPool",
			Name: n, UID: "u", Controller: ctl}
	}
	// The worker pool runs w6; w0 … w5 are older, w0 the oldest.
	workerConfigs := func() []*mcfgv1.MachineConfig {
		return []*mcfgv1.MachineConfig{owned(w0, "worker", 0), owned(w1, "worker", 1), owned(w2, "worker", 2),
			owned(w3, "worker", 3), owned(w4, "worker", 4), owned(w5, "worker", 5), owned(w6, "worker", 6)}
	}
	worker := mkPool("worker", w6, w6)
	for _, c := range []struct {
		name    string
		in      Input
		deleted []string
		why     map[string]string // config → a part of its verdict's why
	}{
		{name: "NothingReferencedKeepZero", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Configs: workerConfigs()},
			deleted: []string{w0, w1, w2, w3, w4, w5},
			why:     map[string]string{w6: "pool worker's spec.configuration", w0: "older than the newest 0 unused"}},
		{name: "RetentionKeepsTheNewestUnused", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Configs: workerConfigs(), Keep: 2},
			deleted: []string{w0, w1, w2, w3},
			why:     map[string]string{w5: "among the newest 2 unused", w4: "among the newest 2 unused", w3: "older than"}},
		{name: "RetentionLargerThanUnused", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Configs: workerConfigs(), Keep: 10}},
		{name: "InUseByNodeCurrent", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Configs: workerConfigs(),
			Nodes: []*corev1.Node{mkNode("a", names.CurrentConfig, w0)}},
			deleted: []string{w1, w2, w3, w4, w5}, why: map[string]string{w0: "in use: node a's currentConfig"}},
		{name: "InUseByNodeDesired", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Configs: workerConfigs(),
			Nodes: []*corev1.Node{mkNode("a", names.CurrentConfig, w6, names.DesiredConfig, w1)}},
			deleted: []string{w0, w2, w3, w4, w5}, why: map[string]string{w1: "in use: node a's desiredConfig"}},
		{name: "InUseByNodeFailedConfig", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Configs: workerConfigs(),
			Nodes: []*corev1.Node{mkNode("a", names.CurrentConfig, w6, names.DesiredConfig, w6, names.FailedConfig, w2)}},
			deleted: []string{w0, w1, w3, w4, w5}, why: map[string]string{w2: "in use: node a's failedConfig"}},
		{name: "InUseByMCN", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Configs: workerConfigs(),
			MCNs: []*mcfgv1.MachineConfigNode{mkMCN("a", w0, &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: w1, Desired: w2}),
				mkMCN("b", w6, nil)}},
			deleted: []string{w3, w4, w5}, why: map[string]string{
				w0: "MachineConfigNode a's spec.configVersion.desired",
				w1: "MachineConfigNode a's status.configVersion.current",
				w2: "MachineConfigNode a's status.configVersion.desired"}},
		// The pool's status.configuration is the previous config the SLO rollback hands back.
		{name: "InUseByPoolSpecAndStatus", in: Input{Pools: []*mcfgv1.MachineConfigPool{mkPool("worker", w5, w1)}, Configs: workerConfigs()},
			deleted: []string{w0, w2, w3, w4, w6}, why: map[string]string{
				w5: "in use: pool worker's spec.configuration", w1: "in use: pool worker's status.configuration"}},
		{name: "ReferencesOutsideRetention", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Configs: workerConfigs(), Keep: 1,
			Nodes: []*corev1.Node{mkNode("a", names.CurrentConfig, w0)}},
			// w0 is in use and does not take a place among the kept unused ones: w5 does.
			deleted: []string{w1, w2, w3, w4}, why: map[string]string{w5: "among the newest 1 unused", w0: "in use"}},
		{name: "SeveralReferencesNamed", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Configs: workerConfigs()[6:],
			Nodes: []*corev1.Node{mkNode("a", names.CurrentConfig, w6, names.DesiredConfig, w6)}},
			why: map[string]string{w6: "in use: pool worker's spec.configuration, pool worker's status.configuration, " +
				"node a's currentConfig, node a's desiredConfig"}},
		{name: "NotCreatedByTheController", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Configs: []*mcfgv1.MachineConfig{
			owned(w6, "worker", 6),
			withRefs(owned(w0, "worker", 0)),                               // no owner
			withRefs(owned(w1, "worker", 0), poolRef("worker", nil)),       // an owner, not the controller
			withRefs(owned(w2, "worker", 0), poolRef("worker", &no)),       // the same, said
			owned(m0, "worker", 0),                                         // another pool's name
			owned("rendered-worker-old", "worker", 0),                      // not rendered-<pool>-<32 hex>
			owned("rendered-worker-"+strings.Repeat("A", 32), "worker", 0), // upper case
			owned("99-worker-ssh", "worker", 0),                            // a fragment: no verdict
			withRefs(owned(w3, "worker", 0), metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "worker", UID: "u", Controller: &yes}),
			withRefs(owned(name("worker", 'a'), "worker", 0), metav1.OwnerReference{APIVersion: "machineconfiguration.openshift.io/v1",
				Kind: "MachineConfig", Name: "worker", UID: "u", Controller: &yes}),
			withRefs(owned(w4, "worker", 0), metav1.OwnerReference{APIVersion: "machineconfiguration.openshift.io/v2",
				Kind: "MachineConfigPool", Name: "worker", UID: "u", Controller: &yes}),
			withRefs(owned(w5, "worker", 0), poolRef("other", nil), poolRef("worker", &yes)), // controller is worker: deleted
		}},
			deleted: []string{w5}, why: map[string]string{w0: "not created by the controller", m0: "not created by the controller",
				"rendered-worker-old": "not created", w4: "not created", name("worker", 'a'): "not created"}},
		{name: "TwoPools", in: Input{Keep: 1,
			Pools: []*mcfgv1.MachineConfigPool{worker, mkPool("master", m2, m2)},
			Nodes: []*corev1.Node{mkNode("m", names.CurrentConfig, m0, names.DesiredConfig, m2)},
			Configs: append(workerConfigs(), owned(m0, "master", 0), owned(m1, "master", 10),
				owned(m2, "master", 20))},
			// master: m0 in use, m1 the newest unused; worker: w5 the newest unused.
			deleted: []string{w0, w1, w2, w3, w4}, why: map[string]string{m1: "newest 1 unused of pool master",
				w5: "newest 1 unused of pool worker"}},
		{name: "TiesByName", in: Input{Pools: []*mcfgv1.MachineConfigPool{worker}, Keep: 1, Configs: []*mcfgv1.MachineConfig{
			owned(w6, "worker", 6), owned(w1, "worker", 1), owned(w3, "worker", 1), owned(w2, "worker", 1)}},
			deleted: []string{w1, w2}, why: map[string]string{w3: "among the newest"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := Decide(c.in)
			var deleted []string
			got := map[string]Verdict{}
			for _, v := range vs {
				if _, dup := got[v.Config.Name]; dup {
					t.Errorf("two verdicts on %s", v.Config.Name)
				}
				got[v.Config.Name] = v
				if v.Delete {
					deleted = append(deleted, v.Config.Name)
					if _, ok := CreatedBy(v.Config); !ok || v.Pool == "" {
						t.Errorf("deletes %s, which the controller did not create", v.Config.Name)
					}
				}
			}
			sort.Strings(deleted)
			if !reflect.DeepEqual(deleted, c.deleted) {
				t.Errorf("deleted %q, want %q", deleted, c.deleted)
			}
			for n, want := range c.why {
				if v, ok := got[n]; !ok || !strings.Contains(v.Why, want) {
					t.Errorf("%s: why %q, want it to say %q", n, v.Why, want)
				}
			}
			if _, ok := got["99-worker-ssh"]; ok {
				t.Errorf("a verdict on a fragment")
			}
		})
	}
}

// TestDecideOrder: the owned configs by pool, newest first, then the
// others, by name, as the command lists them.
func TestDecideOrder(t *testing.T) {
	vs := Decide(Input{Configs: []*mcfgv1.MachineConfig{owned(w1, "worker", 1), withRefs(owned(w0, "worker", 9)),
		owned(m1, "master", 1), owned(w2, "worker", 2), owned(m2, "master", 2)}})
	var names []string
	for _, v := range vs {
		names = append(names, v.Config.Name)
	}
	if want := []string{m2, m1, w2, w1, w0}; !reflect.DeepEqual(names, want) {
		t.Errorf("order %q, want %q", names, want)
	}
}
