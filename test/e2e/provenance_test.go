package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/render"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Issue 41: a node applies a rendered config only when it is the merge of
// its pool's MachineConfigs (--verify-rendered-configs, on by default and
// off elsewhere on this bed, whose tests write rendered configs by hand).
// On a real node with its pod's token: the pool's own render is applied;
// a config named and owned as the controller would make it but carrying a
// file no fragment has (what a stolen controller token could create) is
// refused in prepare, naming the config and the field, with nothing
// written and no cordon; the config the node ran before is taken back
// after the fragments changed (the controller's SLO rollback).
func TestRenderedConfigVerified(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const pool, dir = "pv1", "/etc/machine-config-daemon/no-reboot/"
	config(t, "rendered-pv1-base", ign(nil))
	createPool(ctx, t, pool)
	fragment := provenanceFragment(ctx, t, "99-pv1-a", pool, dir+"pv1", "first\n")
	first := renderPool(ctx, t, pool)
	n, log := nodeOpts(t, pool, "rendered-pv1-base", testbed.NodeOptions{ExtraArgs: []string{"--pool", pool,
		"--allowed-config-pattern", plan.DefaultConfigPattern, "--verify-rendered-configs=true"}})

	// The pool's render is applied.
	if err := n.SetDesired(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, first); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, n, dir+"pv1"); got != "first\n" {
		t.Fatalf("%s holds %q", dir+"pv1", got)
	}

	// A stolen controller token: it may create a rendered config of the
	// pool's (named for its content, owned by the pool) that adds a file,
	// and hand it to the node. The daemon refuses it, naming the field.
	ctl := controllerClient(ctx, t, pool)
	rogue := rogueConfig(ctx, t, ctl, pool, map[string]string{dir + "rogue": "planted\n"})
	from := log.Len()
	patch := []byte(`{"metadata":{"annotations":{"machineconfiguration.openshift.io/desiredConfig":"` + rogue + `"}}}`)
	if _, err := ctl.kube.CoreV1().Nodes().Patch(ctx, pool, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("handing the node %s with the controller's token: %v", rogue, err)
	}
	// The refusal as written: each retry's prepare sets UpdateCompatible
	// Unknown again.
	st, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "NodeDegraded")
		return c != nil && c.Status == "True" && strings.Contains(c.Message, rogue)
	})
	if err != nil {
		t.Fatal(err)
	}
	c := testbed.Find(st, "UpdateCompatible")
	want := `MachineConfig "` + rogue + `": spec.config.storage.files: not the merge of pool pv1's MachineConfigs`
	if c == nil || c.Status != "False" || !strings.Contains(c.Message, want) {
		t.Errorf("UpdateCompatible = %+v, want False with %q", c, want)
	}
	if _, err := os.Lstat(n.Sys.Root + dir + "rogue"); err == nil {
		t.Error("the refused config's file was written")
	}
	if getNode(t, pool).Spec.Unschedulable {
		t.Error("node cordoned for a refused config")
	}
	ctl.done() // its pod, unowned, would hold the node's drains

	// The administrator changes the fragment: its new render is applied;
	// then the config the node ran before is handed back, and taken.
	fragment.Spec.Config.Raw = []byte(ign(map[string]string{dir + "pv1": "second\n"}))
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Update(ctx, fragment, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := renderPool(ctx, t, pool)
	for _, step := range []struct{ config, content string }{{second, "second\n"}, {first, "first\n"}} {
		if err := n.SetDesired(ctx, step.config); err != nil {
			t.Fatal(err)
		}
		if err := waitCurrent(ctx, log, step.config); err != nil {
			t.Fatal(err)
		}
		if got := readNodeFile(t, n, dir+"pv1"); got != step.content {
			t.Errorf("on %s, %s holds %q, want %q", step.config, dir+"pv1", got, step.content)
		}
	}
}

// createPool creates a MachineConfigPool that selects the fragments of its
// role, as the shipped pools do.
func createPool(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: render.PoolSelector(name),
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}}}}
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// provenanceFragment creates an administrator's MachineConfig of pool's
// role with one file.
func provenanceFragment(ctx context.Context, t *testing.T, name, pool, path, content string) *mcfgv1.MachineConfig {
	t.Helper()
	mc := testbed.MachineConfig(name, ign(map[string]string{path: content}))
	mc.Labels = map[string]string{render.RoleLabel: pool}
	out, err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// renderPool renders pool's fragments as the controller does and creates
// the rendered config.
func renderPool(ctx context.Context, t *testing.T, pool string) string {
	t.Helper()
	name, err := bed.RenderPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// controllerTokens are clients with the controller's ServiceAccount token,
// bound to a pod of its Deployment on node (as a stolen token would be).
type controllerTokens struct {
	kube kubernetes.Interface
	mcfg mcfgclient.Interface
	// done deletes the pod (its token then stops working).
	done func()
}

func controllerClient(ctx context.Context, t *testing.T, node string) controllerTokens {
	t.Helper()
	dep, err := bed.Kube.AppsV1().Deployments(testbed.Namespace).Get(ctx, testbed.ControllerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stolen-controller-" + node, Namespace: testbed.Namespace},
		Spec: *dep.Spec.Template.Spec.DeepCopy()}
	pod.Spec.NodeName = node
	pods := bed.Kube.CoreV1().Pods(testbed.Namespace)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := func() {
		zero := int64(0)
		_ = pods.Delete(context.Background(), created.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	t.Cleanup(done)
	cfg, err := bed.CP.RestConfigForPod(ctx, created)
	if err != nil {
		t.Fatal(err)
	}
	return controllerTokens{kube: kubernetes.NewForConfigOrDie(cfg), mcfg: mcfgclient.NewForConfigOrDie(cfg), done: done}
}

// rogueConfig renders pool's fragments and one more with extra files, and
// creates that config as the controller creates its own: named for its
// content, owned by the pool, with the controller's token.
func rogueConfig(ctx context.Context, t *testing.T, ctl controllerTokens, pool string, extra map[string]string) string {
	t.Helper()
	p, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	more := testbed.MachineConfig("zz-"+pool+"-extra", ign(extra))
	more.Labels = map[string]string{render.RoleLabel: pool}
	mc, err := bed.RenderedPool(ctx, pool, more)
	if err != nil {
		t.Fatal(err)
	}
	mc.OwnerReferences = []metav1.OwnerReference{{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool",
		Name: p.Name, UID: p.UID, Controller: new(true)}}
	if _, err := ctl.mcfg.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s with the controller's token: %v", mc.Name, err)
	}
	return mc.Name
}
