package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/cluster/surge"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// surgeSpecPinned: a surge's patch (nodeconfd controller's token k) of an opted-in StatefulSet
// or Deployment may change
// spec.replicas by one and no other field of the spec, above all none the policy did not list
// field by field before (a StatefulSet's persistentVolumeClaimRetentionPolicy, ordinals,
// revisionHistoryLimit): with whenScaled: Delete slipped into a +1, the -1 that follows
// deletes the volumes of the pod it removes. Each refusal names the field.
func surgeSpecPinned(ctx context.Context, t *testing.T, b *bed, k kubernetes.Interface) {
	sts := statefulSet("surge-sts")
	if _, err := b.admin.AppsV1().StatefulSets("default").Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := stsReplicas(ctx, k, sts.Name, 1, 2, ""); err != nil {
		t.Errorf("raising an opted-in StatefulSet's replicas by one: %v", err)
	}
	if err := stsReplicas(ctx, k, sts.Name, 2, 1, ""); err != nil {
		t.Errorf("putting them back: %v", err)
	}
	// A field removed is defaulted back by the API server before admission: the spec is as it
	// was, but for the count.
	if err := stsReplicas(ctx, k, sts.Name, 1, 2, `{"op":"remove","path":"/spec/persistentVolumeClaimRetentionPolicy"}`); err != nil {
		t.Errorf("raising them with a defaulted field removed: %v", err)
	}
	if err := stsReplicas(ctx, k, sts.Name, 2, 1, ""); err != nil {
		t.Errorf("putting them back: %v", err)
	}
	const refused = "a surge changes spec.replicas by one and nothing else, not "
	for _, c := range []struct{ name, op, field string }{
		{"RetentionPolicy", `{"op":"add","path":"/spec/persistentVolumeClaimRetentionPolicy",` +
			`"value":{"whenDeleted":"Retain","whenScaled":"Delete"}}`, "spec.persistentVolumeClaimRetentionPolicy"},
		{"Ordinals", `{"op":"add","path":"/spec/ordinals","value":{"start":5}}`, "spec.ordinals"},
		{"RevisionHistoryLimit", `{"op":"add","path":"/spec/revisionHistoryLimit","value":0}`, "spec.revisionHistoryLimit"},
	} {
		t.Run("Denied/StatefulSet"+c.name, func(t *testing.T) {
			// A StatefulSet of its own: a case the policy let through leaves the others theirs as created.
			one := statefulSet("surge-sts-" + strings.ToLower(c.name))
			if _, err := b.admin.AppsV1().StatefulSets("default").Create(ctx, one, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := wantSurgeControllerDenied(stsReplicas(ctx, k, one.Name, 1, 2, c.op), refused+c.field); err != nil {
				t.Error(err)
			}
		})
	}
	// A Deployment alike: every spec field but replicas.
	err := patchDeployment(ctx, k, "surge-in", `[{"op":"test","path":"/spec/replicas","value":1},`+
		`{"op":"replace","path":"/spec/replicas","value":2},{"op":"add","path":"/spec/paused","value":true}]`)
	if err := wantSurgeControllerDenied(err, refused+"spec.paused"); err != nil {
		t.Errorf("pausing a Deployment with a surge: %v", err)
	}
}

// statefulSet is an opted-in StatefulSet of one replica, as the surge handles them (Parallel).
func statefulSet(name string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{surge.Annotation: "true"}},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: name,
			PodManagementPolicy: appsv1.ParallelPodManagement, Template: deployment(name).Spec.Template},
	}
}

// stsReplicas patches a StatefulSet's replicas as the surge does, with extra (a JSON patch
// operation, or "") in the same patch.
func stsReplicas(ctx context.Context, k kubernetes.Interface, name string, from, to int, extra string) error {
	patch := fmt.Sprintf(`[{"op":"test","path":"/spec/replicas","value":%d},{"op":"replace","path":"/spec/replicas","value":%d}`,
		from, to)
	if extra != "" {
		patch += "," + extra
	}
	_, err := k.AppsV1().StatefulSets("default").Patch(ctx, name, types.JSONPatchType, []byte(patch+"]"),
		metav1.PatchOptions{FieldManager: surge.FieldManager})
	return err
}

// wantSurgeControllerDenied checks err is a Forbidden refusal by nodeconfd-surge-controller
// whose message has want.
func wantSurgeControllerDenied(err error, want string) error {
	return wantDeniedBy(err, "nodeconfd-surge-controller", want)
}
