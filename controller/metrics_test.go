package controller

import (
	"os"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The pool metrics follow the pool's status, go when the pool goes or the
// replica stops leading, pass the Prometheus lint and are documented.
func TestPoolMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.Leading(true)
	m.poolStatus("worker", mcfgv1.MachineConfigPoolStatus{MachineCount: 3, UpdatedMachineCount: 2, ReadyMachineCount: 2,
		UnavailableMachineCount: 1, DegradedMachineCount: 1})
	m.poolStatus("master", mcfgv1.MachineConfigPoolStatus{MachineCount: 1})
	m.handedOff("worker")
	m.handedOff("worker")
	m.renderFailed("master")
	want := `
# HELP nodeconfd_pool_machines The pool's nodes by state, as its status counts them: total, updated, ready, unavailable, degraded (overlapping).
# TYPE nodeconfd_pool_machines gauge
nodeconfd_pool_machines{pool="master",state="degraded"} 0
nodeconfd_pool_machines{pool="master",state="ready"} 0
nodeconfd_pool_machines{pool="master",state="total"} 1
nodeconfd_pool_machines{pool="master",state="unavailable"} 0
nodeconfd_pool_machines{pool="master",state="updated"} 0
nodeconfd_pool_machines{pool="worker",state="degraded"} 1
nodeconfd_pool_machines{pool="worker",state="ready"} 2
nodeconfd_pool_machines{pool="worker",state="total"} 3
nodeconfd_pool_machines{pool="worker",state="unavailable"} 1
nodeconfd_pool_machines{pool="worker",state="updated"} 2
# HELP nodeconfd_pool_handoffs_total Nodes the controller handed the pool's rendered config (each desiredConfig it set).
# TYPE nodeconfd_pool_handoffs_total counter
nodeconfd_pool_handoffs_total{pool="master"} 0
nodeconfd_pool_handoffs_total{pool="worker"} 2
# HELP nodeconfd_pool_render_failures_total Times the pool's MachineConfigs could not be rendered (each new refusal once; its rollout stops meanwhile).
# TYPE nodeconfd_pool_render_failures_total counter
nodeconfd_pool_render_failures_total{pool="master"} 1
nodeconfd_pool_render_failures_total{pool="worker"} 0
`
	names := []string{"nodeconfd_pool_machines", "nodeconfd_pool_handoffs_total", "nodeconfd_pool_render_failures_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	docs, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(names, "nodeconfd_controller_leader") {
		if !strings.Contains(string(docs), "| `"+name+"` |") {
			t.Errorf("%s is not in the tables of docs/metrics.md", name)
		}
	}
	m.poolGone("master")
	if n := testutil.CollectAndCount(reg, names...); n != 7 {
		t.Errorf("after master went: %d series, want worker's 7", n)
	}
	m.Leading(false)
	if n := testutil.CollectAndCount(reg, "nodeconfd_pool_machines"); n != 0 {
		t.Errorf("standing by: %d machine series, want none", n)
	}
	var none *Metrics // a controller without metrics
	none.poolStatus("worker", mcfgv1.MachineConfigPoolStatus{})
	none.handedOff("worker")
}
