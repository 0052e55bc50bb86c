package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// A rendered config's name taken before the controller's create (by anyone who may create
// MachineConfigs: here the same spec, but no owner) is never handed out: the pool (squat, one
// node without a daemon) stops with RenderDegraded naming the owner, its node keeps its config;
// once the taken config is deleted, the controller creates its own and hands it out. Its Lease
// and its Event on the pool pass the policy nodeconfd-controller-records.
func TestRenderedNameTaken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	mcs := bed.MCfg.MachineconfigurationV1().MachineConfigs()
	pools := bed.MCfg.MachineconfigurationV1().MachineConfigPools()
	const role, start = "node-role.kubernetes.io/squat", "rendered-squat-start"
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "squat"}, Spec: mcfgv1.MachineConfigPoolSpec{
		NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{role: ""}},
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel: "squat"}},
		Paused:                true, // the render only, until the name is taken
	}}
	if _, err := pools.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupPool(t, "squat", []string{"squat-1"}, "00-squat") })
	frag := testbed.MachineConfig("00-squat", testbed.Ignition(map[string]string{"/etc/squat": "x"}))
	frag.Labels = map[string]string{roleLabel: "squat"}
	if _, err := mcs.Create(ctx, frag, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "squat-1", Labels: map[string]string{role: ""},
		Annotations: map[string]string{annCurrent: start, annDesired: start, annState: "Done"}}}
	if _, err := bed.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if _, err := bed.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctls := controllers(ctx, t)
	squat := waitPoolNamed(ctx, t, "squat", "its render", func(p *mcfgv1.MachineConfigPool) bool {
		return p.Spec.Configuration.Name != ""
	})
	rendered := squat.Spec.Configuration.Name
	mine, err := mcs.Get(ctx, rendered, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Its Event on the pool passes the policy that holds its Events to pools.
	for {
		evs, err := bed.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=MachineConfigPool,involvedObject.name=squat,reason=RenderedConfig"})
		if err == nil && len(evs.Items) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no RenderedConfig Event on pool squat (%v)", err)
		case <-time.After(200 * time.Millisecond):
		}
	}

	// The name taken while no controller runs (else it would make its own again at once): the
	// same spec, made by someone else (no owner).
	for _, c := range ctls {
		c.Stop()
	}
	if err := mcs.Delete(ctx, rendered, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	taken := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: rendered}, Spec: *mine.Spec.DeepCopy()}
	if _, err := mcs.Create(ctx, taken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setPausedPool(ctx, t, "squat", false)
	controllers(ctx, t)
	squat = waitPoolNamed(ctx, t, "squat", "RenderDegraded naming the owner, on the unpaused pool", func(p *mcfgv1.MachineConfigPool) bool {
		c := condition(p, mcfgv1.MachineConfigPoolRenderDegraded)
		return p.Status.ObservedGeneration == p.Generation && !p.Spec.Paused && c != nil &&
			c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "MachineConfig "+rendered+": metadata.ownerReferences")
	})
	n, err := bed.Kube.CoreV1().Nodes().Get(ctx, "squat-1", metav1.GetOptions{})
	if err != nil || n.Annotations[annDesired] != start {
		t.Fatalf("node squat-1 was handed %s (%v); the pool's status:\n%s", n.Annotations[annDesired], err, describe(squat))
	}

	// Deleted: the controller creates its own, and the pool goes on.
	if err := mcs.Delete(ctx, rendered, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPoolNamed(ctx, t, "squat", "RenderDegraded False", func(p *mcfgv1.MachineConfigPool) bool {
		c := condition(p, mcfgv1.MachineConfigPoolRenderDegraded)
		return c != nil && c.Status == corev1.ConditionFalse
	})
	for {
		n, err := bed.Kube.CoreV1().Nodes().Get(ctx, "squat-1", metav1.GetOptions{})
		if err == nil && n.Annotations[annDesired] == rendered {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node squat-1 was never handed %s", rendered)
		case <-time.After(200 * time.Millisecond):
		}
	}
	got, err := mcs.Get(ctx, rendered, metav1.GetOptions{})
	if err != nil || metav1.GetControllerOf(got) == nil || metav1.GetControllerOf(got).UID != squat.UID {
		t.Errorf("the rendered config handed out is not the controller's own: %v", err)
	}
}

// waitPoolNamed waits until ok holds for the pool.
func waitPoolNamed(ctx context.Context, t *testing.T, name, what string, ok func(*mcfgv1.MachineConfigPool) bool) *mcfgv1.MachineConfigPool {
	t.Helper()
	for {
		p := pool(ctx, t, name)
		if ok(p) {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for pool %s: %s; its status:\n%s", name, what, describe(p))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func setPausedPool(ctx context.Context, t *testing.T, name string, paused bool) {
	t.Helper()
	p := pool(ctx, t, name)
	p.Spec.Paused = paused
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// cleanupPool removes a test's pool, its nodes, its fragment and its rendered configs: the
// other tests share the cluster.
func cleanupPool(t *testing.T, name string, nodes []string, fragment string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mcfg := bed.MCfg.MachineconfigurationV1()
	_ = mcfg.MachineConfigPools().Delete(ctx, name, metav1.DeleteOptions{})
	for _, n := range nodes {
		_ = bed.Kube.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
	}
	_ = mcfg.MachineConfigs().Delete(ctx, fragment, metav1.DeleteOptions{})
	list, err := mcfg.MachineConfigs().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	for _, mc := range list.Items {
		if strings.HasPrefix(mc.Name, "rendered-"+name+"-") {
			_ = mcfg.MachineConfigs().Delete(ctx, mc.Name, metav1.DeleteOptions{})
		}
	}
}

// cleanupWorkers removes a test's worker nodes and fragments from the
// shared worker pool, so that the next test's rollout counts only its own.
func cleanupWorkers(t *testing.T, nodes []string, fragments ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := bed.Kube.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	for _, f := range fragments {
		err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Delete(ctx, f, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
}
