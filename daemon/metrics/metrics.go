// Package metrics serves the daemon's /metrics and /healthz, and counts what
// the daemon does: its requests to the API server, the update's phases,
// results and waits (as the phases.Observer), drains,
// the node's health and config drift, and OS pull retries. The names follow
// the Prometheus conventions (`promtool check metrics`); docs/metrics.md
// lists them.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
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

// serverLimits bound what a client of the metrics server can hold: a
// scraper needs one connection and a second to answer; anything that opens
// many, or keeps them open silent, is refused or cut off.
type serverLimits struct {
	conns                     int           // connections open at once; more wait in the backlog
	header, read, write, idle time.Duration // http.Server's timeouts
}

// defaultLimits are far above what Prometheus needs (one scrape of a small
// page every 15 to 60 s).
func defaultLimits() serverLimits {
	return serverLimits{conns: 16, header: 5 * time.Second, read: 10 * time.Second,
		write: 30 * time.Second, idle: 90 * time.Second}
}

// Serve serves /metrics and /healthz on addr until ctx is done.
func (m *Metrics) Serve(ctx context.Context, addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return m.serve(ctx, lis, defaultLimits())
}

// serve serves on lis within lim until ctx is done.
func (m *Metrics) serve(ctx context.Context, lis net.Listener, lim serverLimits) error {
	mux := http.NewServeMux()
	// Uncompressed: the page is small, and a gzip writer per scrape costs more
	// memory than the bytes it saves.
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{DisableCompression: true}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	lis = netutil.LimitListener(lis, lim.conns)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: lim.header, ReadTimeout: lim.read,
		WriteTimeout: lim.write, IdleTimeout: lim.idle, MaxHeaderBytes: 8 << 10}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
