package controller

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the controller's pool metrics (docs/metrics.md), kept by the
// leader only: a replica standing by shows none. A nil *Metrics counts
// nothing.
type Metrics struct {
	leader         prometheus.Gauge
	machines       *prometheus.GaugeVec
	handoffs       *prometheus.CounterVec
	renderFailures *prometheus.CounterVec
}

// machineStates are the values of nodeconfd_pool_machines' state label,
// the counts of the pool's status: they overlap (a ready node is also
// counted in total, often in updated), so they are never summed.
var machineStates = []string{"total", "updated", "ready", "unavailable", "degraded"}

// NewMetrics registers the pool metrics in reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodeconfd_controller_leader",
			Help: "Whether this replica is the elected leader, the one that renders and rolls out (1) or not (0).",
		}),
		machines: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "nodeconfd_pool_machines",
			Help: "The pool's nodes by state, as its status counts them: total, updated, ready, unavailable, degraded (overlapping).",
		}, []string{"pool", "state"}),
		handoffs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeconfd_pool_handoffs_total",
			Help: "Nodes the controller handed the pool's rendered config (each desiredConfig it set).",
		}, []string{"pool"}),
		renderFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeconfd_pool_render_failures_total",
			Help: "Times the pool's MachineConfigs could not be rendered (each new refusal once; its rollout stops meanwhile).",
		}, []string{"pool"}),
	}
	reg.MustRegister(m.leader, m.machines, m.handoffs, m.renderFailures)
	return m
}

// poolStatus records the pool's counts from the status just decided, and
// shows its counters from 0.
func (m *Metrics) poolStatus(pool string, st mcfgv1.MachineConfigPoolStatus) {
	if m == nil {
		return
	}
	for i, n := range []int32{st.MachineCount, st.UpdatedMachineCount, st.ReadyMachineCount,
		st.UnavailableMachineCount, st.DegradedMachineCount} {
		m.machines.WithLabelValues(pool, machineStates[i]).Set(float64(n))
	}
	m.handoffs.WithLabelValues(pool)
	m.renderFailures.WithLabelValues(pool)
}

// Leading records whether this replica leads. A replica that stops
// leading drops its pool series: the next leader's are the truth.
func (m *Metrics) Leading(leading bool) {
	if m == nil {
		return
	}
	if leading {
		m.leader.Set(1)
		return
	}
	m.leader.Set(0)
	m.machines.Reset()
}

// poolGone removes a deleted pool's series.
func (m *Metrics) poolGone(pool string) {
	if m == nil {
		return
	}
	m.machines.DeletePartialMatch(prometheus.Labels{"pool": pool})
	m.handoffs.DeleteLabelValues(pool)
	m.renderFailures.DeleteLabelValues(pool)
}

func (m *Metrics) handedOff(pool string) {
	if m != nil {
		m.handoffs.WithLabelValues(pool).Inc()
	}
}

func (m *Metrics) renderFailed(pool string) {
	if m != nil {
		m.renderFailures.WithLabelValues(pool).Inc()
	}
}
