package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// The controller, with --rendered-config-retention 1, on a pool of its own
// (prune, paused, two nodes without daemons: only the objects matter)
// deletes the pool's rendered configs that nothing uses but the newest of
// them, and never one in use: by a node's currentConfig, desiredConfig or
// failedConfig, a MachineConfigNode, the pool's spec (its own render) or
// status, nor a rendered-prune-* config it did not create. A config whose
// last reference goes (a node's failedConfig removed) is deleted then.
func TestPruneRenderedConfigs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	mcs := bed.MCfg.MachineconfigurationV1().MachineConfigs()
	pools := bed.MCfg.MachineconfigurationV1().MachineConfigPools()
	const role = "node-role.kubernetes.io/prune"
	name := func(c string) string { return "rendered-prune-" + strings.Repeat(c, 32) }
	cur, des, failed, mcn, status, foreign := name("1"), name("2"), name("3"), name("4"), name("5"), name("f")
	u1, u2, u3 := name("a"), name("b"), name("c")

	yes := true
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "prune"}, Spec: mcfgv1.MachineConfigPoolSpec{
		NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{role: ""}},
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel: "prune"}},
		Paused:                true, // nothing handed: the nodes keep the configs the test gives them
	}}
	p, err := pools.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupPrunePool(t) })
	frag := testbed.MachineConfig("00-prune", testbed.Ignition(map[string]string{"/etc/prune": "x"}))
	frag.Labels = map[string]string{roleLabel: "prune"}
	if _, err := mcs.Create(ctx, frag, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As ensureRendered creates them (manifests' policy and prune.CreatedBy take these as its own).
	create := func(n string, owned bool) {
		t.Helper()
		mc := testbed.MachineConfig(n, testbed.Ignition(nil))
		if owned {
			mc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "machineconfiguration.openshift.io/v1",
				Kind: "MachineConfigPool", Name: "prune", UID: p.UID, Controller: &yes}}
		}
		if _, err := mcs.Create(ctx, mc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The configs in use are the oldest: past the retention, they would go if their use did
	// not count. The unused ones follow, a second apart (creationTimestamp's resolution).
	for _, n := range []string{cur, des, failed, mcn, status} {
		create(n, true)
	}
	create(foreign, false)
	for _, n := range []string{u1, u2, u3} {
		time.Sleep(1100 * time.Millisecond)
		create(n, true)
	}
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "prune-1", Labels: map[string]string{role: ""},
			Annotations: map[string]string{annCurrent: cur, annDesired: des, annState: "Working"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "prune-2", Labels: map[string]string{role: ""},
			Annotations: map[string]string{annCurrent: cur, annDesired: cur, annState: "Done", annFailed: failed}}},
	} {
		if _, err := bed.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	m := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "prune-2"}, Spec: mcfgv1.MachineConfigNodeSpec{
		Node: mcfgv1.MCOObjectReference{Name: "prune-2"}, Pool: mcfgv1.MCOObjectReference{Name: "prune"},
		ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: mcn}}}
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigNodes().Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pools.Patch(ctx, "prune", types.MergePatchType,
		[]byte(fmt.Sprintf(`{"status":{"configuration":{"name":%q}}}`, status)), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}

	ctls := controllers(ctx, t, "--rendered-config-retention", "1")
	waitConfigsGone(ctx, t, u1, u2)
	rendered := ""
	for ctx.Err() == nil && rendered == "" { // the controller's own render, the pool's spec
		if got, err := pools.Get(ctx, "prune", metav1.GetOptions{}); err == nil {
			rendered = got.Spec.Configuration.Name
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A few more reconciles (a node changed): nothing else goes.
	patchNode(ctx, t, "prune-1", `{"metadata":{"labels":{"example.com/touch":"1"}}}`)
	time.Sleep(3 * time.Second)
	kept := []string{cur, des, failed, mcn, status, foreign, u3, rendered, "00-prune"}
	for _, n := range kept {
		if _, err := mcs.Get(ctx, n, metav1.GetOptions{}); err != nil {
			t.Errorf("MachineConfig %s, which must be kept: %v", n, err)
		}
	}
	for _, n := range []string{u1, u2} {
		if !logged(ctls, "Deleted an unused rendered config", `"pool":"prune"`, `"config":"`+n+`"`) {
			t.Errorf("no log line for the deletion of %s with its pool and config", n)
		}
	}

	// The failed config's last reference goes: it is unused, older than u3, deleted.
	patchNode(ctx, t, "prune-2", `{"metadata":{"annotations":{"`+annFailed+`":null}}}`)
	waitConfigsGone(ctx, t, failed)
	for _, n := range []string{cur, des, mcn, status, foreign, u3, rendered} {
		if _, err := mcs.Get(ctx, n, metav1.GetOptions{}); err != nil {
			t.Errorf("MachineConfig %s, which must be kept: %v", n, err)
		}
	}
}

// waitConfigsGone waits until the MachineConfigs are deleted.
func waitConfigsGone(ctx context.Context, t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		for {
			_, err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("MachineConfig %s was never deleted (%v)", n, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

func patchNode(ctx context.Context, t *testing.T, node, patch string) {
	t.Helper()
	if _, err := bed.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// logged says whether a replica logged a line with every part.
func logged(ctls []*testbed.Controller, parts ...string) bool {
	for _, c := range ctls {
		for _, line := range strings.Split(c.Log(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
	}
	return false
}

// cleanupPrunePool removes what TestPruneRenderedConfigs made: the other
// tests share the cluster.
func cleanupPrunePool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mcfg := bed.MCfg.MachineconfigurationV1()
	_ = mcfg.MachineConfigPools().Delete(ctx, "prune", metav1.DeleteOptions{})
	_ = mcfg.MachineConfigNodes().Delete(ctx, "prune-2", metav1.DeleteOptions{})
	for _, n := range []string{"prune-1", "prune-2"} {
		_ = bed.Kube.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
	}
	list, err := mcfg.MachineConfigs().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	for _, mc := range list.Items {
		if mc.Name == "00-prune" || strings.HasPrefix(mc.Name, "rendered-prune-") {
			_ = mcfg.MachineConfigs().Delete(ctx, mc.Name, metav1.DeleteOptions{})
		}
	}
}
