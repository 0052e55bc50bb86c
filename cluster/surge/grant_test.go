package surge

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
	"github.com/nodeconfd/nodeconfd/names"
)

// grantBed is a fake cluster of two nodes (a cordoned by nodeconfd, b not), an opted-in
// Deployment web of 2 replicas with a pod on each, and a Deployment quiet that did not opt in.
type grantBed struct {
	t      *testing.T
	client *fake.Clientset
	g      *Granter
	a, b   *corev1.Node
}

func newGrantBed(t *testing.T) *grantBed {
	yes, two := true, int32(2)
	dep := func(name string, ann map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), Annotations: ann},
			Spec: appsv1.DeploymentSpec{Replicas: &two}}
	}
	rs := func(name string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: "shop",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, Controller: &yes}}}}
	}
	pod := func(name, owner, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner + "-1", Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: node}}
	}
	a := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{names.CordonedBy: "nodeconfd"}},
		Spec: corev1.NodeSpec{Unschedulable: true}}
	b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	objs := []runtime.Object{a, b, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		dep("web", map[string]string{Annotation: "true"}), dep("quiet", nil), rs("web"), rs("quiet"),
		pod("web-a", "web", "a"), pod("web-b", "web", "b"), pod("quiet-a", "quiet", "a")}
	client := fake.NewClientset(objs...)
	return &grantBed{t: t, client: client, a: a, b: b,
		g: &Granter{Client: kubetest.API(client, nil), Namespace: "nodeconfd", Log: zaptest.NewLogger(t)}}
}

// ask creates slot name for node, asking for pod,, decides it, and returns the Lease as answered.
func (gb *grantBed) ask(name string, node *corev1.Node, pod string) *coordinationv1.Lease {
	gb.t.Helper()
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "nodeconfd",
		Labels: map[string]string{NodeLabel: node.Name}, Annotations: map[string]string{PodAnnotation: "shop/" + pod}}}
	if _, err := gb.client.CoordinationV1().Leases("nodeconfd").Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
		gb.t.Fatal(err)
	}
	return gb.decide(name, node)
}

func (gb *grantBed) decide(name string, node *corev1.Node) *coordinationv1.Lease {
	gb.t.Helper()
	ctx := context.Background()
	l, err := gb.client.CoordinationV1().Leases("nodeconfd").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	if err := gb.g.Decide(ctx, l, node); err != nil {
		gb.t.Fatalf("deciding %s: %v", name, err)
	}
	if l, err = gb.client.CoordinationV1().Leases("nodeconfd").Get(ctx, name, metav1.GetOptions{}); err != nil {
		return nil // let go
	}
	return l
}

// uncordon lifts node a's cordon, as its daemon does after the drain.
func (gb *grantBed) uncordon() *corev1.Node {
	gb.t.Helper()
	a := gb.a.DeepCopy()
	a.Spec.Unschedulable, a.Annotations = false, nil
	if _, err := gb.client.CoreV1().Nodes().Update(context.Background(), a, metav1.UpdateOptions{}); err != nil {
		gb.t.Fatal(err)
	}
	return a
}

func (gb *grantBed) Replicas(name string) int32 {
	d, err := gb.client.AppsV1().Deployments("shop").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		gb.t.Fatal(err)
	}
	return *d.Spec.Replicas
}

func TestGranterRefuses(t *testing.T) {
	gb := newGrantBed(t)
	for _, c := range []struct {
		name string
		node *corev1.Node
		pod  string
		want string
	}{
		{"not draining", gb.b, "web-b", "node b is not draining"},
		{"pod on another node", gb.a, "web-b", `pod shop/web-b runs on node "b", not on node a`},
		{"no such pod", gb.a, "ghost", `pod "shop/ghost" does not exist`},
		{"not opted in", gb.a, "quiet-a", "did not opt in"},
	} {
		l := gb.ask("nodeconfd-surge-0", c.node, c.pod)
		if got := l.Annotations[RefusedAnnotation]; !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want %q", c.name, got, c.want)
		}
		if len(l.Finalizers) != 0 || l.Annotations[FromAnnotation] != "" {
			t.Errorf("%s: the refused Lease holds %v, %v", c.name, l.Finalizers, l.Annotations)
		}
		_ = gb.client.CoordinationV1().Leases("nodeconfd").Delete(context.Background(), l.Name, metav1.DeleteOptions{})
	}
	if n := gb.Replicas("web"); n != 2 {
		t.Errorf("web has %d replicas after refusals, want 2", n)
	}
}

func TestGranterRaisesOnceAndPutsBack(t *testing.T) {
	gb := newGrantBed(t)
	l := gb.ask("nodeconfd-surge-0", gb.a, "web-a")
	if l.Annotations[RaisedAnnotation] != "true" || l.Annotations[FromAnnotation] != "2" || l.Annotations[ToAnnotation] != "3" ||
		len(l.Finalizers) != 1 || gb.Replicas("web") != 3 {
		t.Fatalf("granted Lease %v %v, web at %d replicas; want raised 2 → 3, held", l.Annotations, l.Finalizers, gb.Replicas("web"))
	}
	again := gb.ask("nodeconfd-surge-1", gb.a, "web-a")
	if got := again.Annotations[RefusedAnnotation]; !strings.Contains(got, "Deployment shop/web is surged already, for node a") {
		t.Errorf("a second surge: %q", got)
	}
	if n := gb.Replicas("web"); n != 3 {
		t.Errorf("web at %d replicas after a second request, want 3", n)
	}
	// A cache a moment behind the cordon ends nothing: the Node is read again.
	stale := gb.a.DeepCopy()
	stale.Spec.Unschedulable = false
	if l := gb.decide("nodeconfd-surge-0", stale); l == nil || gb.Replicas("web") != 3 {
		t.Errorf("a stale Node ended the surge: Lease %v, web at %d replicas", l, gb.Replicas("web"))
	}
	// The node's cordon lifted: the controller ends the surge itself.
	if l := gb.decide("nodeconfd-surge-0", gb.uncordon()); l != nil {
		t.Errorf("Lease left after its node stopped draining: %v", l.Finalizers)
	}
	if n := gb.Replicas("web"); n != 2 {
		t.Errorf("web at %d replicas after the end, want 2", n)
	}
}

func TestGranterLeavesAChangedCount(t *testing.T) {
	gb := newGrantBed(t)
	gb.ask("nodeconfd-surge-0", gb.a, "web-a")
	d, _ := gb.client.AppsV1().Deployments("shop").Get(context.Background(), "web", metav1.GetOptions{})
	seven := int32(7)
	d.Spec.Replicas = &seven
	if _, err := gb.client.AppsV1().Deployments("shop").Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l := gb.decide("nodeconfd-surge-0", gb.uncordon()); l != nil {
		t.Errorf("Lease left: %v", l)
	}
	if n := gb.Replicas("web"); n != 7 {
		t.Errorf("web at %d replicas, want the 7 someone else set", n)
	}
}
