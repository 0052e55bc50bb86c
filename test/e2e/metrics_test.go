package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// TestMetricsLint scrapes a real daemon's /metrics after an update and a
// config drift on a systemd node, checks what they counted, and runs
// `promtool check metrics` on the page: any lint problem fails the test.
func TestMetricsLint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	promtool := promtool(ctx, t)
	path := "/etc/containers/registries.d/metrics.yaml"
	config(t, "rendered-m1-a", ign(nil))
	config(t, "rendered-m1-b", ign(map[string]string{path: "managed: true\n"}))
	n, log := node(t, "m1", "rendered-m1-a")
	if err := n.SetDesired(ctx, "rendered-m1-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-m1-b"); err != nil {
		t.Fatal(err)
	}
	wantMetric(t, n, `nodeconfd_updates_total{result="succeeded"}`, 1)
	wantMetric(t, n, `nodeconfd_updates_total{result="failed"}`, 0)
	wantMetric(t, n, `nodeconfd_phase_duration_seconds_count{phase="write"}`, 1)
	wantMetric(t, n, `nodeconfd_phase_duration_seconds_count{phase="reload-crio"}`, 1)
	wantMetric(t, n, `nodeconfd_waiting{reason="Paused"}`, 0)
	wantMetric(t, n, `nodeconfd_node_degraded`, 0)
	wantMetric(t, n, `nodeconfd_config_drift`, 0)
	wantMetric(t, n, `nodeconfd_os_pull_retries_total{updater="none"}`, 0)

	if err := os.WriteFile(filepath.Join(n.Sys.Root, path), []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", "ConfigDrift"); err != nil {
		t.Fatal(err)
	}
	wantMetric(t, n, `nodeconfd_node_degraded`, 1)
	wantMetric(t, n, `nodeconfd_config_drift`, 1)
	wantMetric(t, n, `nodeconfd_config_drift_detections_total`, 1)
	checkMetricsPage(ctx, t, n, promtool)
	// A restarted daemon starts from the status it finds: still degraded.
	if err := n.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	wantMetric(t, n, `nodeconfd_node_degraded`, 1)
	wantMetric(t, n, `nodeconfd_config_drift`, 1)
}

// TestMetricsDrainBlocked: a drain blocked by a PodDisruptionBudget past its
// timeout shows as the wait DrainBlocked, with the drain as the phase
// running; once the budget is gone the update finishes, the eviction and
// the blocked time are counted, and the page passes promtool.
func TestMetricsDrainBlocked(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	promtool := promtool(ctx, t)
	const name = "m2"
	config(t, "rendered-m2-a", ign(nil))
	config(t, "rendered-m2-b", ign(map[string]string{"/etc/nodeconfd-metrics.conf": "b\n"}))
	n, log := nodeOpts(t, name, "rendered-m2-a", testbed.NodeOptions{ExtraArgs: []string{"--drain-timeout", "4s", cordonFirst}})
	podsOn(t, name, 1)
	budgetOn(t, "web-"+name)
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-m2-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "Drained")
		return c != nil && strings.Contains(c.Message, "past the 4s drain timeout")
	}); err != nil {
		t.Fatal(err)
	}
	wantMetric(t, n, `nodeconfd_waiting{reason="DrainBlocked"}`, 1)
	if v, err := n.Metric(`nodeconfd_phase_start_time_seconds{phase="drain"}`); err != nil ||
		time.Since(time.Unix(int64(v), 0)) > 5*time.Minute || v > float64(time.Now().Unix()+1) {
		t.Errorf("drain start time %v (%v), want a time of the last minutes", v, err)
	}
	if v, err := n.Metric(`nodeconfd_wait_seconds_total{reason="DrainBlocked"}`); err != nil || v <= 0 {
		t.Errorf("seconds waited on the blocked drain %v (%v), want them counted while it lasts", v, err)
	}
	if err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "web-"+name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-m2-b"); err != nil {
		t.Fatal(err)
	}
	wantMetric(t, n, `nodeconfd_updates_total{result="succeeded"}`, 1) // after the reboot, in the new process
	wantMetric(t, n, `nodeconfd_phase_duration_seconds_count{phase="reboot"}`, 1)
	wantMetric(t, n, `nodeconfd_waiting{reason="DrainBlocked"}`, 0)
	// The drain ran in the daemon before the reboot; the new process
	// counts from 0 again, as a counter may.
	wantMetric(t, n, `nodeconfd_drain_evictions_total`, 0)
	checkMetricsPage(ctx, t, n, promtool)
}

// TestMetricsPaused: a paused node's update, held by the daemon before it
// starts, shows the wait Paused, and ends it once the pause is lifted.
func TestMetricsPaused(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	config(t, "rendered-m4-a", ign(nil))
	config(t, "rendered-m4-b", ign(map[string]string{"/etc/motd.d/metrics": "b\n"}))
	n, log := node(t, "m4", "rendered-m4-a")
	if err := n.Annotate(ctx, map[string]string{"nodeconfd.io/pause": "metrics test"}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-m4-b"); err != nil {
		t.Fatal(err)
	}
	wantMetric(t, n, `nodeconfd_waiting{reason="Paused"}`, 1)
	unpause(ctx, t, "m4")
	if err := waitCurrent(ctx, log, "rendered-m4-b"); err != nil {
		t.Fatal(err)
	}
	wantMetric(t, n, `nodeconfd_waiting{reason="Paused"}`, 0)
	checkMetricsPage(ctx, t, n, promtool(ctx, t))
}

func promtool(ctx context.Context, t *testing.T) string {
	t.Helper()
	p, err := testbed.Promtool(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantMetric checks one sample of the node's daemon's /metrics. The metrics
// are told just after the status is written: it looks again for a while
// before failing.
func wantMetric(t *testing.T, n *testbed.Node, metric string, value float64) {
	t.Helper()
	v, err := n.Metric(metric)
	for end := time.Now().Add(30 * time.Second); (err != nil || v != value) && time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
		v, err = n.Metric(metric)
	}
	if err != nil || v != value {
		t.Errorf("%s = %v (%v), want %v", metric, v, err, value)
	}
}

// checkMetricsPage runs `promtool check metrics` on the daemon's page.
func checkMetricsPage(ctx context.Context, t *testing.T, n *testbed.Node, promtool string) {
	t.Helper()
	page, err := n.MetricsPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := testbed.RunPromtool(ctx, promtool, "", page, "check", "metrics")
	if err != nil {
		t.Fatalf("the daemon's /metrics does not pass promtool:\n%v", err)
	}
	if out != "" {
		t.Errorf("promtool check metrics printed:\n%s", out)
	}
}
