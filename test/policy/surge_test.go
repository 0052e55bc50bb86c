package policy

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/cluster/surge"
)

// surgeWrites: the daemon of node A may ask for surges through slot Leases that name its own
// node and one pod, read them back and free them, and write the surge's Events about a
// workload; it may change no workload's replicas at all (nodeconfd controller does, on its
// request: surgeGrants), nor forge the controller's record in a slot.
func surgeWrites(ctx context.Context, t *testing.T, b *bed, k kubernetes.Interface) {
	for _, name := range []string{"surge-in", "surge-out"} {
		dep := deployment(name)
		if name == "surge-in" {
			dep.Annotations = map[string]string{surge.Annotation: "true"}
		}
		if _, err := b.admin.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	held := lease("nodeconfd-surge-1", nodeB)
	if _, err := b.admin.CoordinationV1().Leases(namespace).Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// (An Event is the probe: a write the policy would refuse that changes nothing that matters
	// while it is not in force yet.)
	eventually(ctx, t, "surge policy in force", func() error {
		return wantSurgeDenied(workloadEvent(ctx, k, "DrainSurge", nodeB), "may only write the surge's Events")
	})

	leases := k.CoordinationV1().Leases(namespace)
	if _, err := leases.Create(ctx, lease("nodeconfd-surge-0", nodeA), metav1.CreateOptions{}); err != nil {
		t.Errorf("taking a surge slot for its own node: %v", err)
	}
	if _, err := leases.List(ctx, metav1.ListOptions{LabelSelector: "nodeconfd.io/surge-node=" + nodeA}); err != nil {
		t.Errorf("listing its surge slots: %v", err)
	}
	if _, err := leases.Get(ctx, "nodeconfd-surge-0", metav1.GetOptions{}); err != nil {
		t.Errorf("reading its slot back for the controller's answer: %v", err)
	}
	if err := workloadEvent(ctx, k, "DrainSurge", nodeA); err != nil {
		t.Errorf("the surge's Event about the Deployment: %v", err)
	}
	if err := leases.Delete(ctx, "nodeconfd-surge-0", metav1.DeleteOptions{}); err != nil {
		t.Errorf("freeing its surge slot: %v", err)
	}

	const ownSlots = "may only write the surge slots (nodeconfd-surge-<n>) that hold its own node"
	const slotHolds = "a surge slot the daemon writes holds only spec.holderIdentity"
	forged := func(ann string) error {
		l := lease("nodeconfd-surge-3", nodeA)
		l.Annotations[ann] = "1"
		_, err := leases.Create(ctx, l, metav1.CreateOptions{})
		return err
	}
	for _, c := range []deniedCase{
		{"SlotOfNodeB", func() error {
			_, err := leases.Create(ctx, lease("nodeconfd-surge-2", nodeB), metav1.CreateOptions{})
			return err
		}, ownSlots},
		{"OtherLease", func() error {
			_, err := leases.Create(ctx, lease("nodeconfd-disruption-0", nodeA), metav1.CreateOptions{})
			return err
		}, outOfSet},
		{"FreeSlotOfNodeB", func() error { return leases.Delete(ctx, held.Name, metav1.DeleteOptions{}) }, ownSlots},
		{"EventFromNodeB", func() error { return workloadEvent(ctx, k, "DrainSurge", nodeB) }, "may only write the surge's Events"},
		// The controller's record and answer: a daemon that wrote them would pick its own base.
		{"ForgedFrom", func() error { return forged("nodeconfd.io/surge-from") }, slotHolds},
		{"ForgedRaised", func() error { return forged("nodeconfd.io/surge-raised") }, slotHolds},
		{"ForgedWorkload", func() error { return forged("nodeconfd.io/surge-workload") }, slotHolds},
	} {
		t.Run("Denied/"+c.name, func(t *testing.T) {
			if err := wantSurgeDenied(c.do(), c.want); err != nil {
				t.Error(err)
			}
		})
	}
	// No write of any workload: RBAC refuses the surge's own patches, by one or any other.
	for _, c := range []struct {
		name string
		do   func() error
	}{
		{"PatchReplicasByOne", func() error { return replicas(ctx, k, "surge-in", 1, 2) }},
		{"PatchReplicasToZero", func() error { return replicas(ctx, k, "surge-in", 1, 0) }},
		{"PatchStatefulSet", func() error { return stsReplicas(ctx, k, "surge-in", 1, 2, "") }},
		{"PatchScale", func() error { return scaleBare(ctx, k, "default", 1, 2) }},
		{"UpdateScale", func() error {
			_, err := k.AppsV1().Deployments("default").UpdateScale(ctx, "surge-in", &autoscalingv1.Scale{
				ObjectMeta: metav1.ObjectMeta{Name: "surge-in", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 9}},
				metav1.UpdateOptions{})
			return err
		}},
		{"DeleteDeployment", func() error { return k.AppsV1().Deployments("default").Delete(ctx, "surge-in", metav1.DeleteOptions{}) }},
	} {
		t.Run("Denied/"+c.name, func(t *testing.T) {
			if err := c.do(); !apierrors.IsForbidden(err) {
				t.Errorf("%v, want Forbidden by RBAC", err)
			}
		})
	}
	if dep, err := b.admin.AppsV1().Deployments("default").Get(ctx, "surge-in", metav1.GetOptions{}); err != nil || *dep.Spec.Replicas != 1 {
		t.Errorf("Deployment surge-in: %v replicas (%v), want the 1 it was created with", dep.Spec.Replicas, err)
	}
}

// surgeControllerWrites: nodeconfd controller's token may raise or lower an opted-in
// workload's replicas by one (a Deployment, or another kind through its scale subresource in a
// namespace that opted in), and nothing else: the policy nodeconfd-surge-controller refuses the
// rest, naming why.
func surgeControllerWrites(ctx context.Context, t *testing.T, b *bed, c kubernetes.Interface) {
	eventually(ctx, t, "controller surge policy in force", func() error {
		return wantDeniedBy(replicas(ctx, c, "surge-out", 1, 2), "nodeconfd-surge-controller", "the workload did not opt in")
	})
	if err := replicas(ctx, c, "surge-in", 1, 2); err != nil {
		t.Errorf("raising an opted-in Deployment's replicas by one: %v", err)
	}
	if err := replicas(ctx, c, "surge-in", 2, 1); err != nil {
		t.Errorf("putting them back: %v", err)
	}
	// Another kind (a bare ReplicaSet) through its scale subresource, in a namespace that opted in.
	if _, err := b.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "surge-ns",
		Annotations: map[string]string{surge.Annotation: "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"surge-ns", "default"} {
		labels := map[string]string{"app": "x"}
		if _, err := b.admin.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "bare"},
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: deployment("x").Spec.Template}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := scaleBare(ctx, c, "surge-ns", 1, 2); err != nil {
		t.Errorf("raising a bare ReplicaSet's scale by one in an opted-in namespace: %v", err)
	}
	if err := scaleBare(ctx, c, "surge-ns", 2, 1); err != nil {
		t.Errorf("putting it back: %v", err)
	}
	const onlyReplicas = "a surge changes spec.replicas by one, never to zero, and nothing else"
	for _, dc := range []deniedCase{
		{"NotOptedIn", func() error { return replicas(ctx, c, "surge-out", 1, 2) }, "the workload did not opt in"},
		{"ByTwo", func() error { return replicas(ctx, c, "surge-in", 1, 3) }, onlyReplicas},
		{"ToZero", func() error { return replicas(ctx, c, "surge-in", 1, 0) }, onlyReplicas},
		{"Image", func() error {
			return patchDeployment(ctx, c, "surge-in", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"example.com/evil"}]`)
		}, onlyReplicas},
		{"Label", func() error {
			return patchDeployment(ctx, c, "surge-in", `[{"op":"add","path":"/metadata/labels","value":{"tier":"evil"}}]`)
		}, onlyReplicas},
		{"OptOutAnnotation", func() error {
			return patchDeployment(ctx, c, "surge-in", `[{"op":"add","path":"/metadata/annotations/nodeconfd.io~1drain-surge","value":"false"}]`)
		}, "the workload did not opt in"},
		{"ScaleByTwo", func() error { return scaleBare(ctx, c, "surge-ns", 1, 3) }, "a surge through a scale subresource"},
		{"ScaleToZero", func() error { return scaleBare(ctx, c, "surge-ns", 1, 0) }, "a surge through a scale subresource"},
		{"ScaleNotOptedIn", func() error { return scaleBare(ctx, c, "default", 1, 2) }, "a surge through a scale subresource"},
	} {
		t.Run("Denied/"+dc.name, func(t *testing.T) {
			if err := wantDeniedBy(dc.do(), "nodeconfd-surge-controller", dc.want); err != nil {
				t.Error(err)
			}
		})
	}
	// RBAC grants no more than the surge's verbs.
	_, err := c.AppsV1().Deployments("default").UpdateScale(ctx, "surge-in", &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "surge-in", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 9}},
		metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("updating a Deployment's scale subresource: %v, want Forbidden", err)
	}
	if err := c.AppsV1().Deployments("default").Delete(ctx, "surge-in", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting a Deployment: %v, want Forbidden", err)
	}
}

// scaleBare patches the scale of ReplicaSet bare in ns as the surge does, through the daemon's
// own adapter.
func scaleBare(ctx context.Context, k kubernetes.Interface, ns string, from, to int) error {
	patch := fmt.Sprintf(`[{"op":"test","path":"/spec/replicas","value":%d},{"op":"replace","path":"/spec/replicas","value":%d}]`,
		from, to)
	return kubeapi.Scales(k.CoreV1().RESTClient()).PatchScale(ctx, kubeapi.ScaleTarget{APIVersion: "apps/v1", Resource: "replicasets",
		Namespace: ns, Name: "bare"}, []byte(patch), surge.FieldManager)
}

func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}}}}}
}

// lease is a slot Lease as a daemon of node writes it, asking for a surge of the owner of pod
// default/web-a.
func lease(name, node string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
		Labels:      map[string]string{"nodeconfd.io/surge-node": node},
		Annotations: map[string]string{"nodeconfd.io/surge-pod": "default/web-a"}}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &node}}
}

// replicas patches a Deployment's replicas as the surge does: a JSON patch that tests the old
// count.
func replicas(ctx context.Context, k kubernetes.Interface, name string, from, to int) error {
	return patchDeployment(ctx, k, name, fmt.Sprintf(`[{"op":"test","path":"/spec/replicas","value":%d},`+
		`{"op":"replace","path":"/spec/replicas","value":%d}]`, from, to))
}

func patchDeployment(ctx context.Context, k kubernetes.Interface, name, patch string) error {
	_, err := k.AppsV1().Deployments("default").Patch(ctx, name, types.JSONPatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: surge.FieldManager})
	return err
}

func workloadEvent(ctx context.Context, k kubernetes.Interface, reason, host string) error {
	now := metav1.Now()
	_, err := k.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "surge-in."},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "surge-in"},
		Reason:         reason, Message: "test", Type: corev1.EventTypeNormal, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "nodeconfd", Host: host},
	}, metav1.CreateOptions{})
	return err
}

// wantSurgeDenied checks err is a Forbidden refusal by nodeconfd-surge whose message has want.
func wantSurgeDenied(err error, want string) error { return wantDeniedBy(err, "nodeconfd-surge", want) }
