package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// blockedByPDB: with a PodDisruptionBudget that allows no disruption of
// the workload (maxUnavailable 0: no surge could lift it), a reboot update of
// a node running one of its pods waits before its cordon, Cordoned saying
// Waiting with the drain's forecast (the budget and the pod), the node still
// schedulable; the daemon's pod deleted meanwhile is replaced and waits
// again; once the budget is gone the update cordons, drains (the Deployment
// recreates the pods), completes, and the node ends uncordoned. It returns
// the node's name.
func blockedByPDB(ctx context.Context, t *testing.T, nodes map[string]*testbed.KubeNode, logs map[string]*testbed.StatusLog,
	ignition string) string {
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
	config := renderConfig(ctx, t, ignition)
	from := logs[name].Len()
	rollOut := map[string]*testbed.KubeNode{name: nodes[name]}
	setDesired(ctx, t, rollOut, config)
	want := forecastOn(ctx, t, name)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		c := logs[name].Condition("Cordoned")
		if c != nil && c.Reason == "Waiting" && c.Message == want {
			t.Logf("node %s: waits before its cordon: %s", name, c.Message)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: the update never said its drain could not finish\n want: %s\nlatest Cordoned: %+v", name, want, c)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if n, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil || n.Spec.Unschedulable {
		t.Errorf("node %s cordoned while its drain could not finish (%v)", name, err)
	}
	restartMidWait(ctx, t, name, logs[name], want)
	if err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, logs[name], from, config); err != nil {
		t.Fatalf("node %s after the budget was removed: %v", name, err)
	}
	waitDeployment(ctx, t, "web", 2)
	if n, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil || n.Spec.Unschedulable {
		t.Errorf("node %s left cordoned (%v)", name, err)
	}
	return name
}

// forecastOn is the drain's forecast the daemon of node is to say while the budget web
// (maxUnavailable 0) holds its workload's pods: the pods on the node grouped under the one
// budget, which the disruption controller counts as needing both of the workload's
// replicas healthy.
func forecastOn(ctx context.Context, t *testing.T, node string) string {
	t.Helper()
	pods, err := bed.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var on []string
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			on = append(on, "default/"+p.Name)
		}
	}
	slices.Sort(on)
	group := "pod " + on[0]
	if len(on) > 1 {
		group = "pods " + strings.Join(on, ", ")
	}
	return "The drain could not finish now: " + group + ": PodDisruptionBudget web allows 0 disruptions " +
		"(needs 2 healthy, has 2); the update waits uncordoned until the budgets allow it"
}

// restartMidWait deletes the daemon's pod while its update waits on the
// drain's forecast (the kubelet's SIGTERM within the grace period), waits
// for the DaemonSet's new pod, and checks that its container takes the
// update up again and waits as before.
func restartMidWait(ctx context.Context, t *testing.T, name string, log *testbed.StatusLog, held string) {
	t.Helper()
	old := daemonPod(ctx, t, name)
	if err := bed.Kube.CoreV1().Pods(testbed.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := waitNewDaemonPod(ctx, t, name, old)
	// The status is already what the new daemon would write, so it writes nothing: its log
	// says it waits.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		l := podLogs(ctx, *pod)
		if strings.Contains(l, "Update waits") && strings.Contains(l, "DrainWouldBlock") &&
			strings.Contains(log.Condition("Cordoned").Message, held) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: the new pod %s did not take the wait up again; its log:\n%s\nlatest:\n%s", name, pod.Name, l,
				log.Describe())
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("node %s: pod %s deleted mid-wait, %s waits again", name, old.Name, pod.Name)
}

// waitNewDaemonPod waits until the DaemonSet's pod on node is a running one
// other than old, and returns it.
func waitNewDaemonPod(ctx context.Context, t *testing.T, node string, old *corev1.Pod) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := bed.Kube.CoreV1().Pods(testbed.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "spec.nodeName=" + node, LabelSelector: "app.kubernetes.io/name=nodeconfd"})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].UID == old.UID {
			return false, nil // the old pod still terminating, or no new one yet
		}
		pod = &pods.Items[0]
		return pod.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("node %s: waiting for the daemon's new pod after deleting %s: %v", node, old.Name, err)
	}
	return pod
}
