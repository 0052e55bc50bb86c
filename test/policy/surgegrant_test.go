package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
	"github.com/nodeconfd/nodeconfd/cluster/surge"
)

// surgeGrants: the only way a node's token moves a workload's replicas is a slot Lease, which
// nodeconfd controller (surge.Granter, here with the controller's own pod-bound token ctl)
// answers. The daemon of node A (token k) asks for surges it must not get: while its node does
// not drain, for a pod on node B, for a pod that does not exist, for a workload that did not
// opt in, a second surge of one surged already; each is refused and the count stays. The
// honest request raises the count by one above the recorded base, the free puts it back to
// the base exactly, and a surge whose node stops draining ends without the daemon.
func surgeGrants(ctx context.Context, t *testing.T, b *bed, k, ctl kubernetes.Interface) {
	ownedPods(ctx, t, b, "grant-in", true)
	ownedPods(ctx, t, b, "grant-out", false)
	gctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	g := &surge.Granter{Client: kubetest.API(ctl, nil), Namespace: namespace, Log: zaptest.NewLogger(t).Named("granter")}
	go func() {
		defer close(done)
		if err := g.Run(gctx, nil); err != nil && gctx.Err() == nil {
			t.Errorf("granter: %v", err)
		}
	}()
	s := &slots{ctx: ctx, t: t, b: b, k: k}
	base := s.count()

	if got := s.ask(20, "grant-in-a"); !strings.Contains(got, "node "+nodeA+" is not draining") {
		t.Errorf("a surge while node %s does not drain: %q, want it refused", nodeA, got)
	}
	s.free(20)
	s.cordon(true)
	for _, c := range []struct {
		slot      int
		pod, want string
	}{
		{21, "grant-in-b", fmt.Sprintf("pod default/grant-in-b runs on node %q, not on node %s", nodeB, nodeA)},
		{22, "nope", `pod "default/nope" does not exist`},
		{23, "grant-out-a", "did not opt in"},
	} {
		if got := s.ask(c.slot, c.pod); !strings.Contains(got, c.want) {
			t.Errorf("a surge for pod %s: %q, want refused with %q", c.pod, got, c.want)
		}
		s.free(c.slot)
	}
	if n := s.count(); n != base {
		t.Fatalf("replicas %d after refused requests, want %d", n, base)
	}

	if got := s.ask(24, "grant-in-a"); got != "raised" {
		t.Fatalf("the honest surge: %q, want raised", got)
	}
	if n := s.count(); n != base+1 {
		t.Errorf("replicas %d after the surge, want %d (base + 1)", n, base+1)
	}
	if got := s.ask(25, "grant-in-a"); !strings.Contains(got, "Deployment default/grant-in is surged already, for node "+nodeA) {
		t.Errorf("a second surge of the same workload: %q, want refused", got)
	}
	s.free(25)
	if n := s.count(); n != base+1 {
		t.Errorf("replicas %d after a second request, want %d (base + 1, no more)", n, base+1)
	}
	s.free(24)
	if n := s.count(); n != base {
		t.Errorf("replicas %d after the surge's end, want the base %d", n, base)
	}

	if got := s.ask(26, "grant-in-a"); got != "raised" {
		t.Fatalf("a surge again: %q, want raised", got)
	}
	s.cordon(false)
	s.gone(26)
	if n := s.count(); n != base {
		t.Errorf("replicas %d once node %s stopped draining, want the base %d", n, nodeA, base)
	}
}

// slots asks for surges as the daemon of node A does, and reads the answers as admin.
type slots struct {
	ctx context.Context
	t   *testing.T
	b   *bed
	k   kubernetes.Interface
}

// ask takes slot n for pod default/pod and waits for the controller's answer: "raised", or
// its refusal.
func (s *slots) ask(n int, pod string) string {
	s.t.Helper()
	l := lease(fmt.Sprintf("nodeconfd-surge-%d", n), nodeA)
	l.Annotations["nodeconfd.io/surge-pod"] = "default/" + pod
	if _, err := s.k.CoordinationV1().Leases(namespace).Create(s.ctx, l, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("asking for a surge of pod %s: %v", pod, err)
	}
	answer := ""
	err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := s.b.admin.CoordinationV1().Leases(namespace).Get(ctx, l.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if why, ok := got.Annotations["nodeconfd.io/surge-refused"]; ok {
			answer = why
		} else if got.Annotations["nodeconfd.io/surge-raised"] == "true" {
			answer = "raised"
		}
		return answer != "", nil
	})
	if err != nil {
		s.t.Fatalf("no answer to the surge request of pod %s: %v", pod, err)
	}
	return answer
}

// free frees slot n as the daemon does, and waits until the controller let it go.
func (s *slots) free(n int) {
	s.t.Helper()
	if err := s.k.CoordinationV1().Leases(namespace).Delete(s.ctx, fmt.Sprintf("nodeconfd-surge-%d", n), metav1.DeleteOptions{}); err != nil {
		s.t.Fatalf("freeing slot %d: %v", n, err)
	}
	s.gone(n)
}

func (s *slots) gone(n int) {
	s.t.Helper()
	err := wait.PollUntilContextTimeout(s.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := s.b.admin.CoordinationV1().Leases(namespace).Get(ctx, fmt.Sprintf("nodeconfd-surge-%d", n), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		s.t.Fatalf("slot %d never let go: %v", n, err)
	}
}

func (s *slots) count() int32 {
	s.t.Helper()
	dep, err := s.b.admin.AppsV1().Deployments("default").Get(s.ctx, "grant-in", metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return *dep.Spec.Replicas
}

// cordon cordons node A as its daemon does before a drain, or lifts it.
func (s *slots) cordon(on bool) {
	s.t.Helper()
	patch := `{"spec":{"unschedulable":true},"metadata":{"annotations":{"machineconfiguration.openshift.io/cordonedBy":"nodeconfd"}}}`
	if !on {
		patch = `{"spec":{"unschedulable":false},"metadata":{"annotations":{"machineconfiguration.openshift.io/cordonedBy":null}}}`
	}
	if _, err := s.b.admin.CoreV1().Nodes().Patch(s.ctx, nodeA, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// ownedPods creates Deployment name (opted in or not), a ReplicaSet it controls and a pod of
// that ReplicaSet on each node (name-a on node A, name-b on node B), as kube-controller-manager
// would (none runs here).
func ownedPods(ctx context.Context, t *testing.T, b *bed, name string, optIn bool) {
	t.Helper()
	dep := deployment(name)
	if optIn {
		dep.Annotations = map[string]string{surge.Annotation: "true"}
	}
	dep, err := b.admin.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{})
	check(t, err)
	yes := true
	rs, err := b.admin.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: dep.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Selector: dep.Spec.Selector, Template: dep.Spec.Template}}, metav1.CreateOptions{})
	check(t, err)
	for suffix, node := range map[string]string{"a": nodeA, "b": nodeB} {
		p := pod(name+"-"+suffix, node, "")
		p.Namespace, p.Labels = "default", dep.Spec.Template.Labels
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}
		_, err := b.admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		check(t, err)
	}
}

// controllerClient is nodeconfd controller's client, with the token of its pod on node B.
func controllerClient(ctx context.Context, t *testing.T, b *bed) kubernetes.Interface {
	t.Helper()
	p, err := b.admin.CoreV1().Pods(namespace).Create(ctx, pod("nodeconfd-controller-surge", nodeB, "nodeconfd-controller"),
		metav1.CreateOptions{})
	check(t, err)
	cfg, err := b.cp.RestConfigForPod(ctx, p)
	check(t, err)
	return kubernetes.NewForConfigOrDie(cfg)
}
