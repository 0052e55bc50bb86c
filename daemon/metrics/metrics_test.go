package metrics

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTest() (*Metrics, *clock) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	return newMetrics(c.now), c
}

// expect compares the named metrics of m's registry with want (text format).
func expect(t *testing.T, m *Metrics, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestPhasesAndResults(t *testing.T) {
	m, c := newTest()
	m.PhaseStarted("drain")
	expect(t, m, `
# HELP nodeconfd_phase_start_time_seconds Start of the update phase running now, in seconds since the Unix epoch; no series while none runs.
# TYPE nodeconfd_phase_start_time_seconds gauge
nodeconfd_phase_start_time_seconds{phase="drain"} 1.8e+09
`, "nodeconfd_phase_start_time_seconds")
	c.t = c.t.Add(time.Minute)
	m.PhaseDone("drain", 42*time.Second)
	if n := testutil.CollectAndCount(m.update.phaseStart); n != 0 {
		t.Errorf("%d phase start series after the phase, want none", n)
	}
	if n := testutil.CollectAndCount(m.update.phaseDuration); n != 1 {
		t.Errorf("%d phase duration series, want 1", n)
	}
	m.PhaseStarted("write")
	m.UpdateFinished(phases.ResultFailed)
	if n := testutil.CollectAndCount(m.update.phaseStart); n != 0 {
		t.Errorf("%d phase start series after the update, want none", n)
	}
	expect(t, m, `
# HELP nodeconfd_updates_total Updates of the node that finished, by result: succeeded, failed, refused or superseded.
# TYPE nodeconfd_updates_total counter
nodeconfd_updates_total{result="failed"} 1
nodeconfd_updates_total{result="refused"} 0
nodeconfd_updates_total{result="succeeded"} 0
nodeconfd_updates_total{result="superseded"} 0
`, "nodeconfd_updates_total")
}

// TestWaits: the current wait shows at 1 and its seconds count live; a new
// reason replaces the current one; the end of the update ends the wait.
func TestWaits(t *testing.T) {
	m, c := newTest()
	m.Waiting(phases.WaitDrainBlocked)
	c.t = c.t.Add(30 * time.Second)
	m.Waiting(phases.WaitDrainBlocked) // idempotent: the wait goes on
	expect(t, m, `
# HELP nodeconfd_waiting Whether the node's update is waiting now (1) or not (0), by what it waits for.
# TYPE nodeconfd_waiting gauge
nodeconfd_waiting{reason="AlertsFiring"} 0
nodeconfd_waiting{reason="BlockingPods"} 0
nodeconfd_waiting{reason="ConfigFailedElsewhere"} 0
nodeconfd_waiting{reason="DrainBlocked"} 1
nodeconfd_waiting{reason="DrainWouldBlock"} 0
nodeconfd_waiting{reason="OutsideMaintenanceWindow"} 0
nodeconfd_waiting{reason="Paused"} 0
nodeconfd_waiting{reason="UpdateSpread"} 0
nodeconfd_waiting{reason="VolumesDetached"} 0
# HELP nodeconfd_wait_seconds_total Time the node's updates have spent waiting, by what they waited for (the current wait included).
# TYPE nodeconfd_wait_seconds_total counter
nodeconfd_wait_seconds_total{reason="AlertsFiring"} 0
nodeconfd_wait_seconds_total{reason="BlockingPods"} 0
nodeconfd_wait_seconds_total{reason="ConfigFailedElsewhere"} 0
nodeconfd_wait_seconds_total{reason="DrainBlocked"} 30
nodeconfd_wait_seconds_total{reason="DrainWouldBlock"} 0
nodeconfd_wait_seconds_total{reason="OutsideMaintenanceWindow"} 0
nodeconfd_wait_seconds_total{reason="Paused"} 0
nodeconfd_wait_seconds_total{reason="UpdateSpread"} 0
nodeconfd_wait_seconds_total{reason="VolumesDetached"} 0
`, "nodeconfd_waiting", "nodeconfd_wait_seconds_total")
	m.Waiting("SomethingNew") // a reason not known shows up as it comes
	c.t = c.t.Add(10 * time.Second)
	m.UpdateFinished(phases.ResultSucceeded)
	c.t = c.t.Add(time.Hour)
	expect(t, m, `
# HELP nodeconfd_waiting Whether the node's update is waiting now (1) or not (0), by what it waits for.
# TYPE nodeconfd_waiting gauge
nodeconfd_waiting{reason="AlertsFiring"} 0
nodeconfd_waiting{reason="BlockingPods"} 0
nodeconfd_waiting{reason="ConfigFailedElsewhere"} 0
nodeconfd_waiting{reason="DrainBlocked"} 0
nodeconfd_waiting{reason="DrainWouldBlock"} 0
nodeconfd_waiting{reason="OutsideMaintenanceWindow"} 0
nodeconfd_waiting{reason="Paused"} 0
nodeconfd_waiting{reason="SomethingNew"} 0
nodeconfd_waiting{reason="UpdateSpread"} 0
nodeconfd_waiting{reason="VolumesDetached"} 0
# HELP nodeconfd_wait_seconds_total Time the node's updates have spent waiting, by what they waited for (the current wait included).
# TYPE nodeconfd_wait_seconds_total counter
nodeconfd_wait_seconds_total{reason="AlertsFiring"} 0
nodeconfd_wait_seconds_total{reason="BlockingPods"} 0
nodeconfd_wait_seconds_total{reason="ConfigFailedElsewhere"} 0
nodeconfd_wait_seconds_total{reason="DrainBlocked"} 30
nodeconfd_wait_seconds_total{reason="DrainWouldBlock"} 0
nodeconfd_wait_seconds_total{reason="OutsideMaintenanceWindow"} 0
nodeconfd_wait_seconds_total{reason="Paused"} 0
nodeconfd_wait_seconds_total{reason="SomethingNew"} 10
nodeconfd_wait_seconds_total{reason="UpdateSpread"} 0
nodeconfd_wait_seconds_total{reason="VolumesDetached"} 0
`, "nodeconfd_waiting", "nodeconfd_wait_seconds_total")
	if n := testutil.CollectAndCount(m.waits.durations); n != 2 {
		t.Errorf("%d wait duration series, want 2 (one per reason waited for)", n)
	}
}

func TestStatusWritten(t *testing.T) {
	m, _ := newTest()
	cond := func(s metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: status.NodeDegraded, Status: s, Reason: reason}}
	}
	m.StatusWritten(cond(metav1.ConditionTrue, "ConfigDrift"))
	m.StatusWritten(cond(metav1.ConditionTrue, "ConfigDrift")) // the same drift, written again
	check := func(what string, degraded, drift, detections float64) {
		t.Helper()
		if g := testutil.ToFloat64(m.node.degraded); g != degraded {
			t.Errorf("%s: degraded %v, want %v", what, g, degraded)
		}
		if g := testutil.ToFloat64(m.node.drift); g != drift {
			t.Errorf("%s: drift %v, want %v", what, g, drift)
		}
		if g := testutil.ToFloat64(m.node.driftDetections); g != detections {
			t.Errorf("%s: detections %v, want %v", what, g, detections)
		}
	}
	check("drift", 1, 1, 1)
	m.StatusWritten(cond(metav1.ConditionTrue, status.ReasonUpdateFailed))
	check("failed update", 1, 0, 1)
	m.StatusWritten(cond(metav1.ConditionFalse, status.ReasonHealthy))
	check("healthy", 0, 0, 1)
	m.StatusWritten(cond(metav1.ConditionTrue, "ConfigDrift"))
	check("drift again", 1, 1, 2)
}

type fakeCluster struct {
	phases.Cluster
	blocked bool
	waiting string // what the metrics showed during the drain
	m       *Metrics
}

func (f *fakeCluster) Drain(_ context.Context, p phases.DrainProgress) (phases.DrainResult, error) {
	if f.blocked {
		p.Blocked("pod a/b: a disruption budget")
	}
	f.waiting = f.m.waits.current
	return phases.DrainResult{Evicted: 3, Blocked: 90 * time.Second}, nil
}

type nopProgress struct{}

func (nopProgress) Progress(string) {}
func (nopProgress) Blocked(string)  {}

func TestDrain(t *testing.T) {
	m, _ := newTest()
	f := &fakeCluster{blocked: true, m: m}
	if _, err := m.Cluster(f).Drain(context.Background(), nopProgress{}); err != nil {
		t.Fatal(err)
	}
	if f.waiting != phases.WaitDrainBlocked || m.waits.current != "" {
		t.Errorf("waiting %q during a blocked drain and %q after, want %q and none", f.waiting, m.waits.current, phases.WaitDrainBlocked)
	}
	if g := testutil.ToFloat64(m.node.evictions); g != 3 {
		t.Errorf("evictions %v, want 3", g)
	}
	if g := testutil.ToFloat64(m.node.drainBlocked); g != 90 {
		t.Errorf("drain blocked seconds %v, want 90", g)
	}
}

// The health gate's results are counted by result.
func TestHealthGateResults(t *testing.T) {
	m, _ := newTest()
	for _, r := range []string{"failed", "rolled-back", "failed"} {
		m.HealthGateResult(r)
	}
	if g := testutil.ToFloat64(m.node.healthResults.WithLabelValues("failed")); g != 2 {
		t.Errorf("failed %v, want 2", g)
	}
	if g := testutil.ToFloat64(m.node.healthResults.WithLabelValues("rolled-back")); g != 1 {
		t.Errorf("rolled-back %v, want 1", g)
	}
}

// TestLint checks every metric, each with a sample, against the Prometheus
// conventions (the lint of `promtool check metrics`; the e2e test runs
// promtool itself on a real daemon's page).
func TestLint(t *testing.T) {
	m, _ := newTest()
	m.PhaseDone("drain", time.Second)
	m.PhaseStarted("write")
	m.Waiting(phases.WaitDrainBlocked)
	m.Waiting("")
	m.OSUpdaterDetected("none")
	m.OSPullRetried("bootc")
	m.HealthGateResult("rolled-back")
	m.Requests.WithLabelValues("GET").Inc()
	m.StatusWritten(nil)
	m.RebootRequired(true)
	m.Registry.MustRegister(BuildInfo("nodeconfd", "v0.0.0", ""))
	problems, err := testutil.GatherAndLint(m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	// Every metric of the daemon's own is documented.
	docs, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if name := f.GetName(); strings.HasPrefix(name, "nodeconfd_") {
			n++
			if !strings.Contains(string(docs), "| `"+name+"` |") {
				t.Errorf("%s is not in the tables of docs/metrics.md", name)
			}
		}
	}
	if n < 17 {
		t.Errorf("%d nodeconfd metrics gathered, want every one (17)", n)
	}
}
