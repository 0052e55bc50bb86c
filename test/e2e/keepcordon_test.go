package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// `nodeconfd plan --node` forecasts that the node's drain would wait on its
// pod (a budget at zero). An administrator uncordons the node while that
// drain is held:
// the daemon cordons it again within seconds, with a Warning Event on the
// Node saying so and when (not who: no field manager owns a lifted cordon).
// Once the budget goes the update completes and the node ends uncordoned.
func TestUncordonDuringDrainUndone(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "kc"
	config(t, "rendered-kc-a", ign(nil))
	config(t, "rendered-kc-b", ign(map[string]string{"/etc/nodeconfd-kc.conf": "b\n"}))
	n, log := nodeOpts(t, name, "rendered-kc-a", testbed.NodeOptions{ExtraArgs: []string{cordonFirst}})
	podsOn(t, name, 1)
	budgetOn(t, "web-"+name)
	// The plan forecasts the drain: the pod, held by the budget at zero.
	r := runPlanCmd(ctx, t, []string{"-o", "json", "--allowed-config-pattern", testbed.TestConfigPattern, "--node", name,
		"--desired", "rendered-kc-b", "--kubeconfig", bed.CP.Kubeconfig()})
	if f := r.Drain; f == nil || len(f.Evict) != 1 || f.Blocked != 1 || f.Evict[0].Pod != "default/web-kc-a" ||
		!strings.Contains(f.Evict[0].BlockedBy, "PodDisruptionBudget web-kc allows 0 disruptions") {
		t.Errorf("drain forecast %+v, want default/web-kc-a held by PodDisruptionBudget web-kc", f)
	}
	cordons := watchCordon(ctx, t, name)
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-kc-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "Drained")
		return c != nil && strings.Contains(c.Message, "PodDisruptionBudget web-kc allows 0 disruptions")
	}); err != nil {
		t.Fatal(err)
	}
	// The administrator's uncordon, as its own field manager.
	if _, err := bed.Kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"unschedulable":false}}`),
		metav1.PatchOptions{FieldManager: "e2e-admin"}); err != nil {
		t.Fatal(err)
	}
	if err := cordons.waitFor(ctx, "on", "off", "on"); err != nil {
		t.Fatal(err)
	}
	wantEventMessage(t, name, "Node", "CordonRestored", "was uncordoned by someone else during the update to rendered-kc-b (seen at ")
	if err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "web-"+name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-kc-b"); err != nil {
		t.Fatal(err)
	}
	if getNode(t, name).Spec.Unschedulable {
		t.Error("node left cordoned after the update")
	}
}
