package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// A reboot update of a node whose pod a PodDisruptionBudget at zero protects (and that did not
// opt in to surges) waits before its cordon: Cordoned says Waiting with the forecast (the pod,
// the budget), the node stays schedulable (with the steering taint), the wait's Event and
// metric name DrainWouldBlock.
// Once the budget is gone the update completes.
func TestDrainForecastWaits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "fw"
	config(t, "rendered-fw-a", ign(nil))
	config(t, "rendered-fw-b", ign(map[string]string{"/etc/nodeconfd-fw.conf": "b\n"}))
	n, log := node(t, name, "rendered-fw-a")
	podsOn(t, name, 1)
	budgetOn(t, "web-"+name)
	const want = "The drain could not finish now: pod default/web-fw-a: PodDisruptionBudget web-fw allows 0 disruptions"
	// The plan says so first.
	r := runPlanCmd(ctx, t, []string{"-o", "json", "--allowed-config-pattern", testbed.TestConfigPattern, "--node", name,
		"--desired", "rendered-fw-b", "--kubeconfig", bed.CP.Kubeconfig()})
	if r.Drain == nil || !strings.Contains(r.Drain.WaitsBeforeCordon, want) {
		t.Errorf("plan's drain forecast %+v, want it to wait before the cordon: %q", r.Drain, want)
	}
	if err := n.SetDesired(ctx, "rendered-fw-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitMessage(ctx, log, "Cordoned", "Waiting", want); err != nil {
		t.Fatal(err)
	}
	waitTaint(ctx, t, name, true, "while its drain could not finish")
	time.Sleep(4 * time.Second) // a gate poll or more
	if getNode(t, name).Spec.Unschedulable {
		t.Error("node cordoned while its drain could not finish")
	}
	if c := log.Condition("Drained"); c != nil && c.Status != metav1.ConditionFalse {
		t.Errorf("Drained = %s %q while waiting before the cordon", c.Status, c.Message)
	}
	if v, err := n.Metric(`nodeconfd_waiting{reason="DrainWouldBlock"}`); err != nil || v != 1 {
		t.Errorf(`nodeconfd_waiting{reason="DrainWouldBlock"} = %v (%v), want 1`, v, err)
	}
	deleted := time.Now()
	if err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "web-"+name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-fw-b"); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s after the budget's deletion", time.Since(deleted).Round(100*time.Millisecond))
	wantEvents(t, name, "Node", "DrainWouldBlock", "WaitEnded")
	waitTaint(ctx, t, name, false, "after the update")
	if getNode(t, name).Spec.Unschedulable {
		t.Error("node left cordoned")
	}
}
