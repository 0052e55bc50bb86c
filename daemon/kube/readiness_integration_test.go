package kube_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// readinessAcrossRestart: the probe of a daemon with a real ServiceAccount
// token asks the real API server without it, finds it ready, not ready
// while it restarts, and ready again after.
func readinessAcrossRestart(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane) {
	admin, err := kubernetes.NewForConfig(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: metav1.NamespaceDefault}}
	if _, err := admin.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := cp.RestConfigFor(ctx, sa.Namespace, sa.Name)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var probes int
	var withToken []string
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			probes++
			if r.Header.Get("Authorization") != "" {
				withToken = append(withToken, r.URL.Path)
			}
			mu.Unlock()
			return rt.RoundTrip(r)
		})
	}
	ready, err := kube.NewReadiness(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !ready.Ready(ctx) {
		t.Fatal("the API server is not ready before its restart")
	}

	var answers []bool // each change of answer while it restarts
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			if r := ready.Ready(ctx); len(answers) == 0 || answers[len(answers)-1] != r {
				answers = append(answers, r)
			}
		}
	}()
	restartErr := cp.RestartAPIServer(ctx)
	close(stop)
	<-done
	if restartErr != nil {
		t.Fatal(restartErr)
	}
	if !ready.Ready(ctx) {
		t.Error("the API server is not ready after its restart")
	}
	t.Logf("answers while it restarted, each change: %v", answers)
	if !slices.Contains(answers, false) {
		t.Errorf("answers while it restarted: %v, want a not ready", answers)
	}
	mu.Lock()
	defer mu.Unlock()
	if probes < 3 {
		t.Errorf("%d probes sent, want one every 25 ms (the probe gave up)", probes)
	}
	if len(withToken) > 0 {
		t.Errorf("requests with the daemon's token: %v", withToken)
	}
}
