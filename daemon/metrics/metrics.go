// Package metrics serves the daemon's and the controller's /metrics, /healthz
// and /readyz (server.go), and counts what
// the daemon does: its requests to the API server, the update's phases,
// results and waits (as the phases.Observer), drains,
// the node's health and config drift, and OS pull retries. The names follow
// the Prometheus conventions (`promtool check metrics`); docs/metrics.md
// lists them.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/nodeconfd/nodeconfd/phases"
)

// Metrics is the daemon's registry and its collectors.
type Metrics struct {
	Registry *prometheus.Registry
	Requests *prometheus.CounterVec
	// OSUpdater is 1 for the node's OS updater: rpm-ostree, bootc or none.
	OSUpdater *prometheus.GaugeVec

	now    func() time.Time
	update updateMetrics
	waits  *waits
	node   *nodeMetrics
}

// New registers the daemon's collectors in a registry of its own.
func New() *Metrics { return newMetrics(time.Now) }

func newMetrics(now func() time.Time) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		now:      now,
		update:   newUpdateMetrics(),
		waits:    newWaits(now, phases.WaitReasons()),
		node:     newNodeMetrics(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeconfd_api_requests_total",
			Help: "Requests the daemon made to the API server, by method.",
		}, []string{"method"}),
		OSUpdater: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "nodeconfd_os_updater",
			Help: "The node's OS updater (1 for the one detected at start): rpm-ostree, bootc or none.",
		}, []string{"updater"}),
	}
	reg.MustRegister(m.Requests, m.OSUpdater, prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	reg.MustRegister(m.update.collectors()...)
	reg.MustRegister(m.waits)
	reg.MustRegister(m.node.collectors()...)
	for _, r := range []string{"sent", "failed", "dropped"} { // notify.Result*
		m.node.notifications.WithLabelValues(r)
	}
	return m
}

// CountRequests makes every request of clients built from cfg count.
func (m *Metrics) CountRequests(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			m.Requests.WithLabelValues(req.Method).Inc()
			return rt.RoundTrip(req)
		})
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
