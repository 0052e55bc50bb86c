package controlplane

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestCluster runs the control plane with kube-scheduler and
// kube-controller-manager: a Deployment's pod is created by the
// controllers and bound by the scheduler to the one node, which a node's
// own credentials registered; the Node authorizer and NodeRestriction keep
// those credentials to their node; the service account controllers give a
// new namespace its "default" ServiceAccount and the CA ConfigMap.
func TestCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := Start(ctx, Options{Dir: t.TempDir(), Log: testLog{t}, Cluster: true, NoCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	admin := kubernetes.NewForConfigOrDie(cp.RestConfig())
	nodeConfig, err := cp.NodeKubeconfig("n1", cp.RestConfig().Host)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(nodeConfig)
	if err != nil {
		t.Fatal(err)
	}
	kubelet := kubernetes.NewForConfigOrDie(cfg)

	if _, err := kubelet.CoreV1().Nodes().Create(ctx, schedulableNode("n1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("node n1 registering itself: %v", err)
	}
	// Ready, as its kubelet reports it: the node lifecycle controller
	// lifts the not-ready taint the node was registered with.
	n1, err := kubelet.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	n1.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := kubelet.CoreV1().Nodes().UpdateStatus(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("node n1 reporting itself ready: %v", err)
	}
	if _, err := kubelet.CoreV1().Nodes().Create(ctx, schedulableNode("n2"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node n1 registering node n2: %v, want forbidden (NodeRestriction)", err)
	}
	if _, err := kubelet.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node n1 listing secrets: %v, want forbidden (Node authorizer)", err)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "idle", Image: "testbed.local/idle:1"}}}},
		},
	}
	// The ServiceAccount admission plugin refuses pods until the
	// controller has made the namespace's "default" ServiceAccount; the
	// ReplicaSet controller retries.
	if _, err := admin.AppsV1().Deployments("apps").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := admin.CoreV1().Pods("apps").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(pods.Items) == 1 && pods.Items[0].Spec.NodeName == "n1", err
	})
	if err != nil {
		pods, _ := admin.CoreV1().Pods("apps").List(ctx, metav1.ListOptions{})
		events, _ := admin.CoreV1().Events("apps").List(context.Background(), metav1.ListOptions{})
		t.Fatalf("waiting for the Deployment's pod bound to n1: %v; pods %+v; events %+v", err, pods, events)
	}
	if _, err := admin.CoreV1().ConfigMaps("apps").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
		t.Errorf("the CA ConfigMap of a new namespace: %v", err)
	}
}

// schedulableNode is a Node as a kubelet registers it, with room for pods.
func schedulableNode(name string) *corev1.Node {
	room := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status:     corev1.NodeStatus{Capacity: room, Allocatable: room},
	}
}
