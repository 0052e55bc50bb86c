package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// blockedByPDB: with a PodDisruptionBudget that allows no disruption of
// the workload, a reboot update of a node running one of its pods holds in
// its drain, the Drained condition naming the budget and the pod; once the
// budget is gone the eviction goes through, the Deployment recreates the
// pod, and the update completes.
func blockedByPDB(ctx context.Context, t *testing.T, nodes map[string]*testbed.KubeNode, logs map[string]*testbed.StatusLog,
	config, ignition string) {
	t.Helper()
	pods, err := bed.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("listing the workload's pods: %v (%d)", err, len(pods.Items))
	}
	name := pods.Items[0].Spec.NodeName
	zero := intstr.FromInt32(0)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createConfig(t, config, ignition)
	from := logs[name].Len()
	rollOut := map[string]*testbed.KubeNode{name: nodes[name]}
	setDesired(ctx, t, rollOut, config)
	const want = "PodDisruptionBudget web allows 0 disruptions"
	deadline := time.Now().Add(3 * time.Minute)
	for {
		c := logs[name].Condition("Drained")
		if c != nil && strings.Contains(c.Message, want) && strings.Contains(c.Message, "pod default/web-") {
			t.Logf("node %s: drain held: %s", name, c.Message)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: the drain never said it waits on the budget; latest Drained: %+v", name, c)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, logs[name], from, config); err != nil {
		t.Fatalf("node %s after the budget was removed: %v", name, err)
	}
	waitDeployment(ctx, t, "web", 2)
}
