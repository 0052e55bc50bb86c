package controlplane

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestControlPlane(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := Start(ctx, Options{Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})

	admin, err := kubernetes.NewForConfig(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	// First, before any other request warms them: every CRD's watch cache
	// serves a streaming list at once, as an informer asks for it (one
	// try, no wait for a Retry-After).
	for _, res := range []string{"machineconfiguration.openshift.io/v1/machineconfigs",
		"machineconfiguration.openshift.io/v1/machineconfignodes", "machineconfiguration.openshift.io/v1/machineconfigpools",
		"operator.openshift.io/v1/machineconfigurations"} {
		body, err := admin.CoreV1().RESTClient().Get().AbsPath("/apis", res).
			Param("watch", "1").Param("sendInitialEvents", "true").Param("allowWatchBookmarks", "true").
			Param("resourceVersionMatch", "NotOlderThan").Param("timeoutSeconds", "1").MaxRetries(0).Stream(ctx)
		if err != nil {
			t.Fatalf("streaming list of %s right after start: %v", res, err)
		}
		body.Close()
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "before-restart"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("CRDsEstablished", func(t *testing.T) {
		res, err := admin.Discovery().ServerResourcesForGroupVersion("machineconfiguration.openshift.io/v1")
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, r := range res.APIResources {
			found[r.Name] = true
		}
		for _, want := range []string{"machineconfigs", "machineconfignodes", "machineconfignodes/status"} {
			if !found[want] {
				t.Errorf("resource %s not served; have %v", want, found)
			}
		}
	})

	t.Run("AdminKubeconfig", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		c := kubernetes.NewForConfigOrDie(cfg)
		if _, err := c.CoreV1().Namespaces().Get(ctx, "before-restart", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(cp.KubectlPath()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ServiceAccountIsBoundByRBAC", func(t *testing.T) {
		const ns = "sa-test"
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		path, err := cp.KubeconfigFor(ctx, ns, "reader")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatal(err)
		}
		sa := kubernetes.NewForConfigOrDie(cfg)
		if _, err := sa.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("listing configmaps without a role: got %v, want Forbidden", err)
		}
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// RBAC changes reach the authorizer's cache within moments.
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := sa.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("listing configmaps with a role: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("RestartAPIServer", func(t *testing.T) {
		host := cp.RestConfig().Host
		if err := cp.RestartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		if got := cp.RestConfig().Host; got != host {
			t.Fatalf("host changed from %s to %s", host, got)
		}
		// The client created before the restart still works, and etcd kept the data.
		if _, err := admin.CoreV1().Namespaces().Get(ctx, "before-restart", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("StopIsIdempotent", func(t *testing.T) {
		if err := cp.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := cp.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := cp.RestartAPIServer(ctx); err == nil {
			t.Fatal("RestartAPIServer after Stop succeeded")
		}
		for _, p := range []*process{cp.etcd, cp.apiserver} {
			if !p.exited() {
				t.Errorf("%s still running", p.name)
			}
		}
	})
}

func TestStartFailsWithoutDir(t *testing.T) {
	if _, err := Start(context.Background(), Options{}); err == nil {
		t.Fatal("Start without Dir succeeded")
	}
}

// testLog writes to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}
