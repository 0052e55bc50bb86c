package policy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodeconfd/nodeconfd/daemon/metrics/secure"
)

// TestMetricsGuard runs the metrics endpoint's guard with the daemon's
// pod-bound token and with the controller's, on the real API server with
// manifests/ applied: their rights (08-metrics.yaml) let them review a
// scrape's token; a ServiceAccount bound to nodeconfd-metrics-reader reads
// /metrics, another is forbidden, no token or a made-up one is refused.
func TestMetricsGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := start(ctx, t)
	prom, stranger := metricsAccounts(ctx, t, b)
	controllerCfg, err := b.cp.RestConfigFor(ctx, namespace, "nodeconfd-controller")
	check(t, err)
	for name, cfg := range map[string]*rest.Config{"daemon": b.bound, "controller": controllerCfg} {
		t.Run(name, func(t *testing.T) {
			reviewer, err := secure.NewAPIReviewer(cfg)
			check(t, err)
			page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
			srv := httptest.NewServer(secure.NewGuard(reviewer, zaptest.NewLogger(t)).Wrap(page))
			defer srv.Close()
			for _, c := range []struct {
				name, token, path string
				want              int
			}{
				{"Prometheus", prom, "/metrics", http.StatusOK},
				{"NotGranted", stranger, "/metrics", http.StatusForbidden},
				{"OtherPath", prom, "/debug/pprof/", http.StatusForbidden}, // the reader may get /metrics only
				{"NoToken", "", "/metrics", http.StatusUnauthorized},
				{"MadeUp", "not-a-token", "/metrics", http.StatusUnauthorized},
			} {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+c.path, nil)
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				resp, err := http.DefaultClient.Do(req)
				check(t, err)
				resp.Body.Close()
				if resp.StatusCode != c.want {
					t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
				}
			}
		})
	}
}

// metricsAccounts creates a ServiceAccount bound to the shipped reader
// ClusterRole and one bound to nothing, and returns a token of each.
func metricsAccounts(ctx context.Context, t *testing.T, b *bed) (prom, stranger string) {
	t.Helper()
	for _, sa := range []string{"prometheus", "stranger"} {
		_, err := b.admin.CoreV1().ServiceAccounts("default").Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		check(t, err)
	}
	_, err := b.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-nodeconfd"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "nodeconfd-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "default"}},
	}, metav1.CreateOptions{})
	check(t, err)
	token := func(sa string) string {
		tr, err := b.admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{},
			metav1.CreateOptions{})
		check(t, err)
		return tr.Status.Token
	}
	return token("prometheus"), token("stranger")
}
