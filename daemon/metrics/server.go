package metrics

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
)

// ServeOptions say how a metrics server serves.
type ServeOptions struct {
	// Addr is the address to listen on.
	Addr string
	// TLS, when set, serves HTTPS (package secure's TLSConfig).
	TLS *tls.Config
	// Guard, when set, wraps /metrics (package secure's Guard.Wrap);
	// /healthz and /readyz tell nothing and stay open to the kubelet's
	// probes, which carry no token.
	Guard func(http.Handler) http.Handler
	// Ready answers /readyz: nil is ready; an error is 503 with its text.
	// Nil: always ready.
	Ready func() error
}

// Serve serves reg's /metrics, /healthz and /readyz as o says until ctx is
// done.
func Serve(ctx context.Context, reg *prometheus.Registry, o ServeOptions) error {
	lis, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err
	}
	if o.TLS != nil {
		lis = tls.NewListener(lis, o.TLS)
	}
	return serve(ctx, lis, handler(reg, o), defaultLimits())
}

// Serve serves the daemon's metrics as o says until ctx is done.
func (m *Metrics) Serve(ctx context.Context, o ServeOptions) error { return Serve(ctx, m.Registry, o) }

func handler(reg *prometheus.Registry, o ServeOptions) http.Handler {
	mux := http.NewServeMux()
	// Uncompressed: the page is small, and a gzip writer per scrape costs more
	// memory than the bytes it saves.
	var page http.Handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{DisableCompression: true})
	if o.Guard != nil {
		page = o.Guard(page)
	}
	mux.Handle("/metrics", page)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if o.Ready != nil {
			if err := o.Ready(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

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

// serve serves h on lis within lim until ctx is done.
func serve(ctx context.Context, lis net.Listener, h http.Handler, lim serverLimits) error {
	lis = netutil.LimitListener(lis, lim.conns)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: lim.header, ReadTimeout: lim.read,
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

// BuildInfo is <prefix>_build_info, Prometheus' convention for a build's
// identity: always 1, labelled with the release, the source revision
// ("unknown" when the build did not record it) and the Go version.
func BuildInfo(prefix, version, revision string) prometheus.Collector {
	if revision == "" {
		revision = "unknown"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        prefix + "_build_info",
		Help:        "The build: 1, labelled with its release (version), source revision and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
