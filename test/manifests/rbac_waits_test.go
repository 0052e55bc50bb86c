package manifests

import (
	"context"
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// checkConfigMapRights checks the daemon's only ConfigMap rights: a list
// and watch of the maintenance-window ConfigMaps by name, in its namespace.
func checkConfigMapRights(ctx context.Context, t *testing.T, daemon kubernetes.Interface) {
	t.Helper()
	for _, tt := range []struct {
		verb, name, namespace string
		allowed               bool
	}{
		{"list", "nodeconfd-windows-worker", "nodeconfd", true},
		{"watch", "nodeconfd-windows-worker", "nodeconfd", true},
		{"watch", "nodeconfd-windows-master", "nodeconfd", true},
		{"get", "nodeconfd-windows-worker", "nodeconfd", false},
		{"update", "nodeconfd-windows-worker", "nodeconfd", false},
		{"list", "", "nodeconfd", false},
		{"watch", "kube-root-ca.crt", "nodeconfd", false},
		{"list", "nodeconfd-windows-worker", "default", false},
	} {
		name := fmt.Sprintf("%s configmaps %q in %q", tt.verb, tt.name, tt.namespace)
		review, err := daemon.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: tt.verb, Resource: "configmaps", Name: tt.name, Namespace: tt.namespace,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if review.Status.Allowed != tt.allowed {
			t.Errorf("%s: allowed=%v, want %v", name, review.Status.Allowed, tt.allowed)
		}
	}
}
