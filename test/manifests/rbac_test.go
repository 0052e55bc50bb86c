package manifests

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestDaemonRBAC checks, as the daemon's ServiceAccount, every right the daemon needs and a
// few it must not have.
func TestDaemonRBAC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := start(ctx, t)
	kubectl(t, cp, "apply", "--server-side", "-f", filepath.Join(repoRoot, "manifests"))
	cfg, err := cp.RestConfigFor(ctx, "nodeconfd", "nodeconfd")
	if err != nil {
		t.Fatal(err)
	}
	daemon := kubernetes.NewForConfigOrDie(cfg)

	const mcfg = "machineconfiguration.openshift.io"
	tests := []struct {
		verb, group, resource, subresource, namespace string
		allowed                                       bool
	}{
		{"get", "", "nodes", "", "", true},
		{"watch", "", "nodes", "", "", true},
		{"patch", "", "nodes", "", "", true},
		{"patch", "", "nodes", "status", "", true}, // the lifecycle conditions (nodeconfd-own-node-status)
		{"update", "", "nodes", "status", "", false},
		{"list", "", "pods", "", "", true},
		{"create", "", "pods", "eviction", "apps", true},
		{"list", "policy", "poddisruptionbudgets", "", "apps", true},
		{"get", mcfg, "machineconfigs", "", "", true},
		{"list", mcfg, "machineconfigs", "", "", true},                // its pool's, to check a rendered config (daemon.Provenance)
		{"list", "storage.k8s.io", "volumeattachments", "", "", true}, // the wait before a reboot (kube.AttachedVolumes)
		{"get", "", "persistentvolumes", "", "", true},
		{"delete", "storage.k8s.io", "volumeattachments", "", "", false},
		{"create", mcfg, "machineconfignodes", "", "", true},
		{"watch", mcfg, "machineconfignodes", "", "", true},
		{"patch", mcfg, "machineconfignodes", "", "", true},
		{"patch", mcfg, "machineconfignodes", "status", "", true},
		{"create", "", "events", "", "default", true},
		{"patch", "", "events", "", "default", true},
		{"get", "", "events", "", "default", true},
		{"list", "", "configmaps", "", "nodeconfd", false}, // only the windows' ConfigMaps, by name
		// The drain's surge: owners, opt-in, autoscalers, read only; the controller changes the
		// replicas on the daemon's request (issue 41).
		{"get", "apps", "replicasets", "", "apps", true},
		{"get", "apps", "deployments", "", "apps", true},
		{"get", "apps.kruise.io", "clonesets", "scale", "apps", true},
		{"patch", "apps", "deployments", "", "apps", false},
		{"patch", "apps", "statefulsets", "", "apps", false},
		{"patch", "apps.kruise.io", "clonesets", "scale", "apps", false},
		{"update", "apps", "deployments", "scale", "apps", false},
		{"list", "autoscaling", "horizontalpodautoscalers", "", "apps", true},
		{"get", "", "namespaces", "", "", true},
		// The metrics endpoint's guard (08-metrics.yaml): the reviews of a scrape's token.
		{"create", "authentication.k8s.io", "tokenreviews", "", "", true},
		{"create", "authorization.k8s.io", "subjectaccessreviews", "", "", true},
		{"create", "authorization.k8s.io", "localsubjectaccessreviews", "", "nodeconfd", false},
		{"create", "authentication.k8s.io", "tokenrequests", "", "", false},
		{"create", "", "serviceaccounts", "token", "nodeconfd", false},

		// Not called by the daemon: trimmed.
		{"update", mcfg, "machineconfignodes", "", "", false},
		{"update", mcfg, "machineconfignodes", "status", "", false},
		{"create", "events.k8s.io", "events", "", "default", false},
		{"update", mcfg, "machineconfigs", "", "", false},
		{"delete", mcfg, "machineconfignodes", "", "", false},
		{"delete", "", "pods", "", "apps", false},
		{"update", "policy", "poddisruptionbudgets", "", "apps", false},
		{"delete", "", "nodes", "", "", false},
		{"update", "", "nodes", "status", "", false},
		{"get", "", "secrets", "", "nodeconfd", false},
		{"update", "apps", "deployments", "", "apps", false},
		{"delete", "apps", "deployments", "", "apps", false},
		{"update", "apps", "replicasets", "", "apps", false},
		{"patch", "apps", "daemonsets", "", "apps", false},
		{"get", "example.com", "widgets", "", "apps", false}, // no other kind is read
		// Leases: only the surge slots in its own namespace (create, get for the controller's
		// answer, list, delete; the policy nodeconfd-surge narrows them to its own node's). The
		// disruption budget of Leases is gone.
		{"get", "coordination.k8s.io", "leases", "", "nodeconfd", true},
		{"list", "coordination.k8s.io", "leases", "", "nodeconfd", true},
		{"create", "coordination.k8s.io", "leases", "", "nodeconfd", true},
		{"update", "coordination.k8s.io", "leases", "", "nodeconfd", false},
		{"delete", "coordination.k8s.io", "leases", "", "nodeconfd", true},
		{"update", "coordination.k8s.io", "leases", "", "kube-system", false},
		{"list", "coordination.k8s.io", "leases", "", "default", false},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s %s/%s/%s in %q", tt.verb, tt.group, tt.resource, tt.subresource, tt.namespace)
		review, err := daemon.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: tt.verb, Group: tt.group, Resource: tt.resource, Subresource: tt.subresource, Namespace: tt.namespace,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if review.Status.Allowed != tt.allowed {
			t.Errorf("%s: allowed=%v, want %v", name, review.Status.Allowed, tt.allowed)
		}
	}
	checkConfigMapRights(ctx, t, daemon)
}
