package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeconfd/nodeconfd/phases"
)

// durationBuckets spans the phases and waits of an update: a config write
// takes a fraction of a second, a drain or a reboot minutes, a maintenance
// window or a blocked drain hours.
func durationBuckets() []float64 {
	return []float64{0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600}
}

// updateMetrics are the collectors of the update's progress.
type updateMetrics struct {
	phaseDuration *prometheus.HistogramVec
	phaseStart    *prometheus.GaugeVec
	updates       *prometheus.CounterVec
}

func newUpdateMetrics() updateMetrics {
	u := updateMetrics{
		phaseDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nodeconfd_phase_duration_seconds",
			Help:    "Duration of each update phase that ended well, by phase (a reboot's spans the boot).",
			Buckets: durationBuckets(),
		}, []string{"phase"}),
		phaseStart: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "nodeconfd_phase_start_time_seconds",
			Help: "Start of the update phase running now, in seconds since the Unix epoch; no series while none runs.",
		}, []string{"phase"}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeconfd_updates_total",
			Help: "Updates of the node that finished, by result: succeeded, failed, refused or superseded.",
		}, []string{"result"}),
	}
	for _, r := range phases.Results() {
		u.updates.WithLabelValues(r)
	}
	return u
}

func (u updateMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{u.phaseDuration, u.phaseStart, u.updates}
}

// The phases.Observer implementation.

// PhaseStarted marks phase as the one running.
func (m *Metrics) PhaseStarted(phase string) {
	m.update.phaseStart.Reset()
	m.update.phaseStart.WithLabelValues(phase).Set(float64(m.now().UnixNano()) / 1e9)
}

// PhaseDone observes the duration of a phase that ended well.
func (m *Metrics) PhaseDone(phase string, took time.Duration) {
	m.update.phaseStart.Reset()
	m.update.phaseDuration.WithLabelValues(phase).Observe(took.Seconds())
}

// UpdateFinished counts a finished update; no phase runs and nothing is
// waited for any more.
func (m *Metrics) UpdateFinished(result string) {
	m.update.phaseStart.Reset()
	m.waits.set("")
	m.update.updates.WithLabelValues(result).Inc()
}

// Waiting makes reason what the update waits for, "" for nothing.
func (m *Metrics) Waiting(reason string) { m.waits.set(reason) }

var _ phases.Observer = (*Metrics)(nil)
