package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// TestMetricsLint scrapes a real daemon's /metrics after an update and a
// config drift on a systemd node, checks what they counted, and runs
// `promtool check metrics` on the page: any lint problem fails the test.
func TestMetricsLint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	promtool, err := testbed.Promtool(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
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
	// The metrics are told just after the status is written: look again
	// for a while before failing.
	want := func(metric string, value float64) {
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
	want(`nodeconfd_updates_total{result="succeeded"}`, 1)
	want(`nodeconfd_updates_total{result="failed"}`, 0)
	want(`nodeconfd_phase_duration_seconds_count{phase="write"}`, 1)
	want(`nodeconfd_phase_duration_seconds_count{phase="reload-crio"}`, 1)
	want(`nodeconfd_waiting{reason="disruption_slot"}`, 0)
	want(`nodeconfd_node_degraded`, 0)
	want(`nodeconfd_config_drift`, 0)
	want(`nodeconfd_os_pull_retries_total{updater="none"}`, 0)

	if err := os.WriteFile(filepath.Join(n.Sys.Root, path), []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", "ConfigDrift"); err != nil {
		t.Fatal(err)
	}
	want(`nodeconfd_node_degraded`, 1)
	want(`nodeconfd_config_drift`, 1)
	want(`nodeconfd_config_drift_detections_total`, 1)

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
