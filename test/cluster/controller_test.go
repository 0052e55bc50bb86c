package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// controllerRuns checks the controller's Deployment as shipped on the real
// nodes: both replicas run (as user 65532, read-only root, the image built
// here) on node, the one set aside for it (testbed.ControllerNodeLabel, a
// term of the Deployment's required node affinity), one is elected leader with its pod's projected token, and
// the leader reconciles the shipped pools (the bed's configs carry no pool
// role, so it renders nothing and hands no node a config: the test sets
// them).
func controllerRuns(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	if err := bed.LabelControllerNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	var d *appsv1.Deployment
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var err error
		d, err = bed.Kube.AppsV1().Deployments(testbed.Namespace).Get(ctx, testbed.ControllerName, metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 2, err
	})
	if err != nil {
		t.Fatalf("waiting for the controller's two replicas: %v (status %+v)", err, d.Status)
	}
	if got, want := d.Spec.Template.Spec.Containers[0].Image, bed.Images().DaemonRef; got != want {
		t.Errorf("the controller runs image %s, want %s", got, want)
	}
	// Pods of a node deleted since (an earlier test's) linger until the pod
	// garbage collector removes them: wait for the two on node.
	var pods []corev1.Pod
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := bed.Kube.CoreV1().Pods(testbed.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/name=" + testbed.ControllerName})
		if err != nil {
			return false, err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
		for _, p := range pods {
			if p.Spec.NodeName != node || !podReady(p) {
				return false, nil
			}
		}
		return len(pods) == 2, nil
	})
	if err != nil {
		for _, p := range pods {
			t.Logf("controller pod %s: node %q, phase %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
		t.Fatalf("waiting for the controller's two pods to run on node %s, the only node set aside for them: %v", node, err)
	}
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range pods {
			logs := podLogs(ctx, p)
			if strings.Contains(logs, `"msg":"Became the leader"`) && strings.Contains(logs, `"msg":"Caches synced; reconciling pools"`) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		for _, p := range pods {
			t.Logf("log of %s:\n%s", p.Name, podLogs(ctx, p))
		}
		t.Fatalf("no controller replica led and reconciled: %v", err)
	}
}

func podLogs(ctx context.Context, p corev1.Pod) string {
	data, err := bed.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return err.Error()
	}
	return string(data)
}
