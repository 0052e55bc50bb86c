package metrics

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// waits tracks what the update waits for: the current reason (one at a
// time) and the seconds waited per reason, counted live at each scrape so
// that a wait without end shows as it goes.
type waits struct {
	now func() time.Time

	mu      sync.Mutex
	reasons []string // every reason seen or known, shown at 0 when idle
	current string
	since   time.Time
	waited  map[string]float64 // seconds of the finished waits

	waiting, seconds *prometheus.Desc
	// durations is the duration of each finished wait, by reason.
	durations *prometheus.HistogramVec
}

func newWaits(now func() time.Time, known []string) *waits {
	return &waits{
		now:     now,
		reasons: slices.Clone(known),
		waited:  map[string]float64{},
		waiting: prometheus.NewDesc("nodeconfd_waiting",
			"Whether the node's update is waiting now (1) or not (0), by what it waits for.", []string{"reason"}, nil),
		seconds: prometheus.NewDesc("nodeconfd_wait_seconds_total",
			"Time the node's updates have spent waiting, by what they waited for (the current wait included).",
			[]string{"reason"}, nil),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nodeconfd_wait_duration_seconds",
			Help:    "Duration of each finished wait of an update, by what it waited for.",
			Buckets: durationBuckets(),
		}, []string{"reason"}),
	}
}

// set makes reason the current wait ("" for none); the one it replaces ends.
func (w *waits) set(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if reason == w.current {
		return
	}
	now := w.now()
	if w.current != "" {
		took := now.Sub(w.since).Seconds()
		w.waited[w.current] += took
		w.durations.WithLabelValues(w.current).Observe(took)
	}
	w.current, w.since = reason, now
	if reason != "" && !slices.Contains(w.reasons, reason) {
		w.reasons = append(w.reasons, reason)
	}
}

func (w *waits) Describe(ch chan<- *prometheus.Desc) {
	ch <- w.waiting
	ch <- w.seconds
	w.durations.Describe(ch)
}

func (w *waits) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.reasons {
		on, secs := 0.0, w.waited[r]
		if r == w.current {
			on, secs = 1, secs+w.now().Sub(w.since).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(w.waiting, prometheus.GaugeValue, on, r)
		ch <- prometheus.MustNewConstMetric(w.seconds, prometheus.CounterValue, secs, r)
	}
	w.durations.Collect(ch)
}
