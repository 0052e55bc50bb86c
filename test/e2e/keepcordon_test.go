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

// An administrator uncordons a node while its drain is held by a budget:
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
	n, log := node(t, name, "rendered-kc-a")
	podsOn(t, name, 1)
	budgetOn(t, "web-"+name)
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
