package metrics

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// reasonConfigDrift is the NodeDegraded reason of a config drift (package
// daemon, idle.go).
const reasonConfigDrift = "ConfigDrift"

// nodeMetrics are the collectors of the node's health, the drain, and the
// OS updater's retries.
type nodeMetrics struct {
	degraded, drift prometheus.Gauge
	rebootRequired  prometheus.Gauge
	driftDetections prometheus.Counter
	evictions       prometheus.Counter
	drainBlocked    prometheus.Counter
	osPullRetries   *prometheus.CounterVec
	healthResults   *prometheus.CounterVec
	notifications   *prometheus.CounterVec
	surges          *prometheus.CounterVec

	mu       sync.Mutex
	drifting bool
}

func newNodeMetrics() *nodeMetrics {
	return &nodeMetrics{
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodeconfd_node_degraded",
			Help: "Whether the node's MachineConfigNode says NodeDegraded=True (1) or not (0): a failed update or a config drift.",
		}),
		drift: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodeconfd_config_drift",
			Help: "Whether the node's files, units or SSH keys differ from the config it runs (1) or not (0).",
		}),
		rebootRequired: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodeconfd_reboot_required",
			Help: "Whether the node asks for a reboot that has not happened yet (1) or not (0): its Node carries nodeconfd.io/reboot-requested.",
		}),
		driftDetections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodeconfd_config_drift_detections_total",
			Help: "Times the node was found to drift from the config it runs.",
		}),
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodeconfd_drain_evictions_total",
			Help: "Pods evicted by the node's drains.",
		}),
		drainBlocked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodeconfd_drain_blocked_seconds_total",
			Help: "Time the node's finished drains spent with at least one eviction refused (a disruption budget, an error).",
		}),
		osPullRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeconfd_os_pull_retries_total",
			Help: "Retries of failed OS image pulls (rpm-ostree rebase, bootc switch), by updater.",
		}, []string{"updater"}),
		healthResults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeconfd_health_gate_results_total",
			Help: "Results of the post-update health gate: passed, failed, rolled-back, rollback-failed.",
		}, []string{"result"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeconfd_notifications_total",
			Help: "Notifications to the webhook (--notify-url), by result: sent, failed, dropped (the queue was full).",
		}, []string{"result"}),
		surges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeconfd_drain_surges_total",
			Help: "Surges of the node's drains, by step: raised (a workload got one more replica), lowered (put back), " +
				"refused (opted in but must not be surged), failed (a request failed).",
		}, []string{"result"}),
	}
}

// surgeResults are the values of nodeconfd_drain_surges_total's label,
// each shown from the start (at 0).
var surgeResults = []string{"raised", "lowered", "refused", "failed"}

func (n *nodeMetrics) collectors() []prometheus.Collector {
	for _, r := range surgeResults {
		n.surges.WithLabelValues(r)
	}
	return []prometheus.Collector{n.degraded, n.drift, n.rebootRequired, n.driftDetections, n.evictions, n.drainBlocked, n.osPullRetries,
		n.healthResults, n.notifications, n.surges}
}

// StatusWritten reads the node's health from the MachineConfigNode
// conditions just written (kube.Client.StatusWritten): NodeDegraded, and a
// config drift when that is its reason.
func (m *Metrics) StatusWritten(conds []metav1.Condition) {
	n := m.node
	reason, degraded := "", false
	if c := status.Find(conds, status.NodeDegraded); c != nil && c.Status == metav1.ConditionTrue {
		reason, degraded = c.Reason, true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.degraded.Set(b2f(degraded))
	drifting := degraded && reason == reasonConfigDrift
	if drifting && !n.drifting {
		n.driftDetections.Inc()
	}
	n.drifting = drifting
	n.drift.Set(b2f(drifting))
}

// RebootRequired records whether the node asks for a reboot
// (daemon.Daemon.RebootRequired): kured's one metric, decided here from the
// request the controller answers (the sentinel file, the check command or
// an administrator set it), not from the sentinel alone.
func (m *Metrics) RebootRequired(asked bool) { m.node.rebootRequired.Set(b2f(asked)) }

// HealthGateResult counts one result of the health gate
// (phases.HealthGate.Observe).
func (m *Metrics) HealthGateResult(result string) { m.node.healthResults.WithLabelValues(result).Inc() }

// NotificationResult counts one notification's result (package notify).
func (m *Metrics) NotificationResult(result string) {
	m.node.notifications.WithLabelValues(result).Inc()
}

// DrainSurge counts one step of a drain's surge (drain.SurgeOptions.Count).
func (m *Metrics) DrainSurge(result string) { m.node.surges.WithLabelValues(result).Inc() }

// OSPullRetried counts a retried OS image pull (osupdate.Retry.Retried).
func (m *Metrics) OSPullRetried(tool string) { m.node.osPullRetries.WithLabelValues(tool).Inc() }

// OSUpdaterDetected records the node's OS updater, and shows its pull
// retries at 0.
func (m *Metrics) OSUpdaterDetected(name string) {
	m.OSUpdater.WithLabelValues(name).Set(1)
	m.node.osPullRetries.WithLabelValues(name)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Cluster returns c with its drains counted: evictions, blocked time, and a
// drain blocked past its timeout as the wait phases.WaitDrainBlocked.
func (m *Metrics) Cluster(c phases.Cluster) phases.Cluster { return cluster{Cluster: c, m: m} }

type cluster struct {
	phases.Cluster
	m *Metrics
}

func (c cluster) Drain(ctx context.Context, p phases.DrainProgress) (phases.DrainResult, error) {
	bp := &blockedProgress{DrainProgress: p, m: c.m}
	res, err := c.Cluster.Drain(ctx, bp)
	if bp.blocked.Load() {
		c.m.Waiting("")
	}
	c.m.node.evictions.Add(float64(res.Evicted))
	c.m.node.drainBlocked.Add(res.Blocked.Seconds())
	return res, err
}

type blockedProgress struct {
	phases.DrainProgress
	m       *Metrics
	blocked atomic.Bool
}

func (p *blockedProgress) Blocked(msg string) {
	p.blocked.Store(true)
	p.m.Waiting(phases.WaitDrainBlocked)
	p.DrainProgress.Blocked(msg)
}
