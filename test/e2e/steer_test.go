package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// While a reboot update waits before its cordon (here for a blocking pod), the node carries the
// daemon's PreferNoSchedule taint; it is taken off when the node is paused (back on when the
// pause ends), when a new desired config replaces the update (a rollback), when the daemon is
// SIGKILLed mid-wait and starts again with nothing to wait for, and when the update goes on to
// its cordon and completes.
func TestSteeringTaint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const name = "steer"
	config(t, "rendered-steer-a", ign(nil))
	config(t, "rendered-steer-b", ign(map[string]string{"/etc/motd.d/steer": "b\n"}))
	n, log := nodeOpts(t, name, "rendered-steer-a", testbed.NodeOptions{ExtraArgs: []string{
		"--blocking-pod-selector", "app=backup,run=" + name}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "backup-" + name, Namespace: "default",
		Labels: map[string]string{"app": "backup", "run": name}},
		Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "example.com/backup"}}}}
	if _, err := bed.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-steer-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitMessage(ctx, log, "Cordoned", "Waiting", "Blocked by 1 pod"); err != nil {
		t.Fatal(err)
	}
	waitTaint(ctx, t, name, true, "while the update waits for the blocking pod")

	if err := n.Annotate(ctx, map[string]string{"nodeconfd.io/pause": "carol: not now"}); err != nil {
		t.Fatal(err)
	}
	waitTaint(ctx, t, name, false, "while the node is paused")
	unpause(ctx, t, name)
	waitTaint(ctx, t, name, true, "once the pause ended")

	if err := n.SetDesired(ctx, "rendered-steer-a"); err != nil { // a rollback: nothing to do
		t.Fatal(err)
	}
	waitTaint(ctx, t, name, false, "once a rollback replaced the update")

	if err := n.SetDesired(ctx, "rendered-steer-b"); err != nil {
		t.Fatal(err)
	}
	waitTaint(ctx, t, name, true, "when the update waits again")
	if err := n.KillDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-steer-a"); err != nil { // while the daemon is down
		t.Fatal(err)
	}
	if !drain.HasSteerTaint(getNode(t, name)) {
		t.Errorf("the killed daemon's taint is not there: %+v", getNode(t, name).Spec.Taints)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	waitTaint(ctx, t, name, false, "once the restarted daemon found nothing to wait for")

	if err := n.SetDesired(ctx, "rendered-steer-b"); err != nil {
		t.Fatal(err)
	}
	waitTaint(ctx, t, name, true, "when the update waits once more")
	zero := int64(0)
	if err := bed.Kube.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-steer-b"); err != nil {
		t.Fatal(err)
	}
	waitTaint(ctx, t, name, false, "after the update")
}

// waitTaint waits until the node carries the steering taint (on) or not.
func waitTaint(ctx context.Context, t *testing.T, name string, on bool, when string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := getNode(t, name)
		if drain.HasSteerTaint(n) == on {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("node %s %s: taints %s, want the steering taint %s", name, when, fmt.Sprint(n.Spec.Taints),
				map[bool]string{true: "on", false: "off"}[on])
		}
		time.Sleep(100 * time.Millisecond)
	}
}
