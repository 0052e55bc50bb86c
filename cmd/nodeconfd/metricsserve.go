package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/nodeconfd/nodeconfd/daemon/metrics"
	"github.com/nodeconfd/nodeconfd/daemon/metrics/secure"
)

// metricsOptions are the metrics server's flags, the same for the daemon
// and the controller (docs/metrics.md, "Scraping").
type metricsOptions struct {
	addr, auth        string
	certFile, keyFile string
}

// The values of --metrics-auth.
const (
	metricsAuthKubernetes = "kubernetes"
	metricsAuthNone       = "none"
)

func (m *metricsOptions) register(fs *flag.FlagSet, defaultAddr, what string) {
	fs.StringVar(&m.addr, "metrics-address", defaultAddr, "address of "+what+" (empty: off)")
	fs.StringVar(&m.auth, "metrics-auth", metricsAuthKubernetes, "who may read /metrics: kubernetes (HTTPS; a bearer "+
		"token the API server authenticates, whose user may get the non-resource URL /metrics: a TokenReview and a "+
		"SubjectAccessReview, as kube-rbac-proxy does) or none (plain HTTP, anyone who reaches the address: keep it "+
		"on loopback)")
	fs.StringVar(&m.certFile, "metrics-tls-cert-file", "", "the metrics server's certificate (PEM), read again when it "+
		"changes (default: a self-signed one made at start)")
	fs.StringVar(&m.keyFile, "metrics-tls-key-file", "", "the key of --metrics-tls-cert-file (PEM)")
}

func (m *metricsOptions) check() error {
	if m.auth != metricsAuthKubernetes && m.auth != metricsAuthNone {
		return fmt.Errorf("--metrics-auth %q: want %s or %s", m.auth, metricsAuthKubernetes, metricsAuthNone)
	}
	if m.auth == metricsAuthNone && (m.certFile != "" || m.keyFile != "") {
		return fmt.Errorf("--metrics-tls-cert-file, --metrics-tls-key-file: only with --metrics-auth=%s (none serves plain HTTP)",
			metricsAuthKubernetes)
	}
	if (m.certFile == "") != (m.keyFile == "") {
		return fmt.Errorf("--metrics-tls-cert-file and --metrics-tls-key-file: give both or neither")
	}
	return nil
}

// options builds the server's options: with --metrics-auth=kubernetes, TLS
// (the certificate named host when self-signed) and the guard asking the
// API server of cfg.
func (m *metricsOptions) options(cfg *rest.Config, host string, ready func() error, log *zap.Logger) (metrics.ServeOptions, error) {
	o := metrics.ServeOptions{Addr: m.addr, Ready: ready}
	if m.auth == metricsAuthNone {
		return o, nil
	}
	tlsCfg, err := secure.TLSConfig(m.certFile, m.keyFile, host)
	if err != nil {
		return o, err
	}
	reviewer, err := secure.NewAPIReviewer(cfg)
	if err != nil {
		return o, err
	}
	o.TLS, o.Guard = tlsCfg, secure.NewGuard(reviewer, log.Named("metrics")).Wrap
	return o, nil
}

// serve serves reg as o says until ctx ends, in the background; a server
// that stops with an error is logged.
func serveRegistry(ctx context.Context, reg *prometheus.Registry, o metrics.ServeOptions, log *zap.Logger) {
	if o.Addr == "" {
		return
	}
	go func() {
		if err := metrics.Serve(ctx, reg, o); err != nil {
			log.Error("Metrics server stopped", zap.String("address", o.Addr), zap.Error(err))
		}
	}()
}
