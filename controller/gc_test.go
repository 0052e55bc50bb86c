package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgfake "github.com/openshift/client-go/machineconfiguration/clientset/versioned/fake"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
	"github.com/nodeconfd/nodeconfd/controller/prune"
	"github.com/nodeconfd/nodeconfd/phases/render"
)

// The controller deletes its pool's unused rendered configs past the
// retention, each with its UID and resourceVersion as preconditions and a
// log line naming pool and config; it counts the pool's spec as this
// reconcile set it and a config just handed to a node, which the caches do
// not show yet; it leaves other pools' configs to their reconciles.
func TestPruneRendered(t *testing.T) {
	hash := func(c string) string { return strings.Repeat(c, 32) }
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", UID: "pool-uid"}}
	master := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "master", UID: "master-uid"}}
	mk := func(p *mcfgv1.MachineConfigPool, c string, min int) *mcfgv1.MachineConfig {
		mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-" + p.Name + "-" + hash(c),
			UID: types.UID("uid-" + p.Name + c), ResourceVersion: "1" + c,
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(min) * time.Minute))}}
		mc.OwnerReferences = renderedOwner(p)
		return mc
	}
	// w0 … w5 oldest to newest; w5 is the pool's new config (set by this reconcile, not yet in
	// the cache, whose pool still names w4), w1 was just handed to node n.
	var configs []*mcfgv1.MachineConfig
	for i, c := range []string{"0", "1", "2", "3", "4", "5"} {
		configs = append(configs, mk(pool, c, i))
	}
	// The master pool's two unused configs: the older is past the retention, but for the
	// master pool's reconcile to delete.
	m0, m1 := mk(master, "0", 0), mk(master, "1", 1)
	objs := []runtime.Object{m0, m1}
	for _, mc := range configs {
		objs = append(objs, mc)
	}
	mcfg := mcfgfake.NewClientset(objs...)
	var deletes []k8stesting.DeleteActionImpl
	mcfg.PrependReactor("delete", "machineconfigs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deletes = append(deletes, a.(k8stesting.DeleteActionImpl))
		return false, nil, nil
	})
	core, logs := observer.New(zap.InfoLevel)
	c := &Controller{API: kubetest.API(k8sfake.NewClientset(), mcfg), Retention: 1,
		handed: map[string]handoff{"n": {config: configs[1].Name, before: "7"}}, pruneFailed: map[string]string{},
		pools: bare(&mcfgv1.MachineConfigPool{}), nodes: bare(&corev1.Node{}), configs: bare(&mcfgv1.MachineConfig{}),
		mcns: bare(&mcfgv1.MachineConfigNode{})}
	cached := pool.DeepCopy()
	cached.Spec.Configuration.Name = configs[4].Name
	add(t, c.pools, cached)
	add(t, c.pools, master)
	add(t, c.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "7",
		Annotations: map[string]string{"machineconfiguration.openshift.io/desiredConfig": configs[0].Name}}})
	for _, mc := range append(configs, m0, m1) {
		add(t, c.configs, mc)
	}
	fresh := pool.DeepCopy()
	fresh.Spec.Configuration.Name = configs[5].Name
	c.pruneRendered(context.Background(), fresh, zap.New(core).With(zap.String("pool", "worker")))

	// In use: w5 (the fresh spec), w4 (the cache's spec), w1 (handed); kept: w3, the newest
	// unused; w0 (named only by the node's desiredConfig the handoff replaced) and w2 go.
	var got []string
	for _, d := range deletes {
		got = append(got, d.Name)
		p := d.DeleteOptions.Preconditions
		want := configs[slices.IndexFunc(configs, func(mc *mcfgv1.MachineConfig) bool { return mc.Name == d.Name })]
		if p == nil || p.UID == nil || *p.UID != want.UID || p.ResourceVersion == nil || *p.ResourceVersion != want.ResourceVersion {
			t.Errorf("delete of %s: preconditions %+v, want UID %s and resourceVersion %s", d.Name, p, want.UID, want.ResourceVersion)
		}
	}
	if want := []string{configs[2].Name, configs[0].Name}; !slices.Equal(got, want) {
		t.Fatalf("deleted %q, want %q", got, want)
	}
	left, err := mcfg.MachineconfigurationV1().MachineConfigs().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(left.Items) != 6 {
		t.Fatalf("left %d configs (%v), want 6", len(left.Items), err)
	}
	for _, name := range got {
		entries := logs.FilterMessage("Deleted an unused rendered config").FilterField(zap.String("config", name)).
			FilterField(zap.String("pool", "worker")).Len()
		if entries != 1 {
			t.Errorf("%d log lines for %s, want one with pool and config", entries, name)
		}
	}

	// The cache still shows them: the next reconcile's deletes find nothing and log nothing.
	deletes = nil
	c.pruneRendered(context.Background(), fresh, zap.New(core).With(zap.String("pool", "worker")))
	if n := logs.Len(); n != 2 {
		t.Errorf("%d log lines after a second pass, want the first 2:\n%v", n, logs.All())
	}
	// Retention 0: nothing is deleted.
	deletes = nil
	c.Retention = 0
	c.pruneRendered(context.Background(), fresh, zap.New(core))
	if len(deletes) != 0 {
		t.Errorf("retention 0 deleted %d configs", len(deletes))
	}
}

// What ensureRendered writes is what prune.CreatedBy (and the admission
// policy) take for the controller's own rendered config.
func TestRenderedOwnerIsThePruneMarker(t *testing.T) {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "infra-1", UID: "u"}}
	name, err := render.Name(p.Name, mcfgv1.MachineConfigSpec{OSImageURL: "example.com/os"})
	if err != nil {
		t.Fatal(err)
	}
	mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: renderedOwner(p)}}
	if pool, ok := prune.CreatedBy(mc); !ok || pool != p.Name {
		t.Fatalf("prune.CreatedBy(%s owned by %+v) = %q, %v", mc.Name, mc.OwnerReferences, pool, ok)
	}
}
