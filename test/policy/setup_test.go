// Package policy tests the daemon's admission policies (manifests/04-admission-policy.yaml)
// with the rest of manifests/ on a real kube-apiserver, with real tokens: one bound to a daemon
// Pod on node A (TokenRequest with a boundObjectRef, so it carries the node-name claim), and one
// bound to nothing.
package policy

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

const (
	repoRoot  = "../.."
	namespace = "nodeconfd"
	nodeA     = "policy-a"
	nodeB     = "policy-b"
)

// bed is the API server with manifests/ applied, two nodes and the daemon's identities.
type bed struct {
	cp      *controlplane.ControlPlane
	admin   kubernetes.Interface
	mcfg    mcfgclient.Interface
	bound   *rest.Config // the daemon of node A, with its pod's token
	unbound *rest.Config // the daemon's ServiceAccount, with a token bound to nothing
}

func start(ctx context.Context, t *testing.T) *bed {
	t.Helper()
	// With API Priority and Fairness, as real clusters run (07-flowcontrol.yaml is tested here).
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir(), Log: controlplane.TestLog{T: t},
		PriorityAndFairness: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	b := &bed{cp: cp, admin: kubernetes.NewForConfigOrDie(cp.RestConfig()), mcfg: mcfgclient.NewForConfigOrDie(cp.RestConfig())}
	kubectl(t, cp, "apply", "-f", filepath.Join(repoRoot, "manifests"))
	for _, n := range []string{nodeA, nodeB} {
		_, err := b.admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: n, Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
			Annotations: map[string]string{"machineconfiguration.openshift.io/desiredConfig": "rendered-worker-1",
				"example.com/owner": "cluster"},
		}}, metav1.CreateOptions{})
		check(t, err)
	}
	daemonPod, err := b.admin.CoreV1().Pods(namespace).Create(ctx, pod("nodeconfd-"+nodeA, nodeA, "nodeconfd"), metav1.CreateOptions{})
	check(t, err)
	for _, p := range []*corev1.Pod{pod("web-a", nodeA, ""), pod("web-b", nodeB, "")} {
		p.Namespace = "default"
		_, err := b.admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		check(t, err)
	}
	if b.bound, err = cp.RestConfigForPod(ctx, daemonPod); err != nil {
		t.Fatal(err)
	}
	if b.unbound, err = cp.RestConfigFor(ctx, namespace, "nodeconfd"); err != nil {
		t.Fatal(err)
	}
	mcn := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: nodeB}, Spec: mcfgv1.MachineConfigNodeSpec{
		Node: mcfgv1.MCOObjectReference{Name: nodeB}, Pool: mcfgv1.MCOObjectReference{Name: "worker"},
		ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: "rendered-worker-1"},
	}}
	_, err = b.mcfg.MachineconfigurationV1().MachineConfigNodes().Create(ctx, mcn, metav1.CreateOptions{})
	check(t, err)
	return b
}

func pod(name, node, serviceAccount string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: serviceAccount,
			Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}},
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventually retries f until it returns nil: an admission policy takes effect a moment after
// it is created, and the API server's parameter informer needs to sync.
func eventually(ctx context.Context, t *testing.T, what string, f func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var err error
	for ctx.Err() == nil {
		if err = f(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
}

// kubectl runs kubectl as admin and returns its stdout.
func kubectl(t *testing.T, cp *controlplane.ControlPlane, args ...string) string {
	t.Helper()
	return cp.MustKubectl(t, args...)
}
