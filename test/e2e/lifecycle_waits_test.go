package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/lifecycle"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// TestNodeLifecycleConditionsWaitRollback: with --node-lifecycle-conditions, a reboot update
// held before its cordon by a blocking pod says MaintenancePlanned=True while it waits, the node
// still schedulable; once the pod is gone it cordons, drains, writes and reboots, fails its
// health gate and is rolled back (a second reboot) to the config it came from; the rollback's
// uncordon clears every lifecycle condition, so no stale MaintenanceInProgress or Drained stays
// on a node that runs its previous config.
func TestNodeLifecycleConditionsWaitRollback(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	wantGateOn(ctx, t)
	const name, dir = "lcw", "/etc/nodeconfd-lcw"
	config(t, "rendered-lcw-a", ign(map[string]string{dir + "/conf": "good\n"}))
	config(t, "rendered-lcw-b", ign(map[string]string{dir + "/conf": "bad\n", dir + "/broken": "x\n"}))
	n, log := nodeOpts(t, name, "rendered-lcw-a", testbed.NodeOptions{ExtraArgs: []string{"--node-lifecycle-conditions",
		"--blocking-pod-selector", "app=backup,run=" + name,
		"--health-command", "/usr/bin/test ! -e " + dir + "/broken", "--health-timeout", "20s",
		"--retry-initial", "1s", "--retry-max", "5s"}})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("status of %s:\n%s", name, log.Describe())
		}
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "backup-" + name, Namespace: "default",
		Labels: map[string]string{"app": "backup", "run": name}},
		Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "example.com/backup"}}}}
	if _, err := bed.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := recordLifecycle(ctx, t, name)
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-lcw-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitMessage(ctx, log, "Cordoned", "Waiting", "Blocked by 1 pod matching app=backup,run="+name); err != nil {
		t.Fatal(err)
	}
	planned := waitLifecycle(ctx, t, name, corev1.NodeMaintenancePlanned, corev1.ConditionTrue)
	if planned.Reason != lifecycle.ReasonUpdateWaiting || !strings.Contains(planned.Message, "BlockingPods") {
		t.Errorf("MaintenancePlanned while the update waits: %s %q, want %s naming BlockingPods", planned.Reason,
			planned.Message, lifecycle.ReasonUpdateWaiting)
	}
	if node := getNode(t, name); node.Spec.Unschedulable {
		t.Error("node cordoned while its update waits for a blocking pod")
	}
	if got := rec.waitFor(ctx, 1); len(got) != 1 || got[0] != "MaintenancePlanned=True" {
		t.Errorf("lifecycle writes while the update waits: %q, want MaintenancePlanned=True alone", got)
	}
	zero := int64(0)
	if err := bed.Kube.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := waitRolledBack(ctx, log, from, "rendered-lcw-b"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"MaintenancePlanned=True",
		"DrainInProgress=True",
		"DrainInProgress=False Drained=True",
		"MaintenancePlanned=False MaintenanceInProgress=True",
		"Drained=False MaintenanceInProgress=False",
	}
	got := rec.waitFor(ctx, len(want))
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("lifecycle condition writes, one per Node update seen:\n got: %s\nwant: %s",
			strings.Join(got, " | "), strings.Join(want, " | "))
	}
	node := getNode(t, name)
	for _, c := range node.Status.Conditions {
		for _, typ := range lifecycle.Types() {
			if c.Type == typ && c.Status != corev1.ConditionFalse {
				t.Errorf("%s = %s (%s) after the rollback, want False", c.Type, c.Status, c.Reason)
			}
		}
	}
	if node.Annotations[annCurrent] != "rendered-lcw-a" || node.Annotations[annFailed] != "rendered-lcw-b" || node.Spec.Unschedulable {
		t.Errorf("after the rollback: currentConfig %q, failedConfig %q, unschedulable %v", node.Annotations[annCurrent],
			node.Annotations[annFailed], node.Spec.Unschedulable)
	}
	if b := n.Sys.Boots(); b != 3 {
		t.Errorf("boots = %d, want 3 (the update's reboot and the rollback's)", b)
	}
	t.Logf("Node %s's conditions after the rollback: %s", name, describeConditions(node.Status.Conditions))
}

// waitLifecycle waits until the Node's condition typ has status, and returns it.
func waitLifecycle(ctx context.Context, t *testing.T, name string, typ corev1.NodeConditionType,
	status corev1.ConditionStatus) corev1.NodeCondition {
	t.Helper()
	for {
		for _, c := range getNode(t, name).Status.Conditions {
			if c.Type == typ && c.Status == status {
				return c
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %s: %s never became %s", name, typ, status)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
