package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// sloTarget is a metric the test sets, scraped by a real Prometheus.
type sloTarget struct {
	errors atomic.Int64
	prom   *testbed.Prometheus
}

func startSLOTarget(ctx context.Context, t *testing.T) *sloTarget {
	t.Helper()
	s := &sloTarget{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE e2e_slo_errors gauge\ne2e_slo_errors %d\n", s.errors.Load())
	}))
	t.Cleanup(srv.Close)
	cfg := fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n- job_name: slo\n  static_configs: [{targets: [%q]}]\n",
		strings.TrimPrefix(srv.URL, "http://"))
	var err error
	if s.prom, err = bed.StartPrometheus(ctx, t.TempDir(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.prom.Stop)
	return s
}

// sloBreachStops: with a soak time and an SLO query on the pool, a config
// whose first node breaks the SLO during its soak (the test's metric goes
// over the threshold) stops the pool, naming the query, the value and the
// node; the node is handed the previous config back, and no other node is
// handed the broken one.
func sloBreachStops(ctx context.Context, t *testing.T, s *sampler, slo *sloTarget) {
	t.Helper()
	// Undo healthGateStops: the pool goes back to the config every node runs.
	if err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Delete(ctx, "80-worker-broken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	good := waitPool(ctx, t, "back on a config every node runs", func(p *mcfgv1.MachineConfigPool) bool {
		c := condition(p, mcfgv1.MachineConfigPoolUpdated)
		return c != nil && c.Status == corev1.ConditionTrue
	}).Spec.Configuration.Name
	annotatePool(ctx, t, map[string]string{"nodeconfd.io/soak-time": "40s", "nodeconfd.io/slo-queries": "e2e_slo_errors < 1"})
	slo.errors.Store(5) // asked once the first node soaks
	apply(ctx, t, fragment("50-worker-one", map[string]string{"one": "slo"}))
	p := waitPool(ctx, t, "stopped by the SLO", func(p *mcfgv1.MachineConfigPool) bool {
		c := condition(p, "SLOBreached")
		return p.Spec.Configuration.Name != good && c != nil && c.Status == corev1.ConditionTrue
	})
	bad := p.Spec.Configuration.Name
	c := condition(p, "SLOBreached")
	want := fmt.Sprintf("%s broke the SLO \"e2e_slo_errors < 1\" during node w-a1's soak (value 5)", bad)
	if c.Message != want || c.Reason != bad {
		t.Errorf("SLOBreached %s %q, want %q", c.Reason, c.Message, want)
	}
	waitNode(ctx, t, "w-a1", "rolled back to "+good, func(n *corev1.Node) bool {
		return n.Annotations[annDesired] == good && n.Annotations[annCurrent] == good && unavailable(n) == ""
	})
	time.Sleep(3 * time.Second)
	if got := s.order(bad); len(got) != 1 || got[0] != "w-a1" {
		t.Errorf("the config that broke the SLO was handed to %v, want only w-a1", got)
	}
	if m := updatingMessage(pool(ctx, t, "worker")); !strings.Contains(m, "the rollout stops until the pool's config changes") {
		t.Errorf("Updating message %q", m)
	}
}

func annotatePool(ctx context.Context, t *testing.T, ann map[string]string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Patch(ctx, "worker", types.MergePatchType, b,
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
