package main

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/metrics"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// apiClient builds the daemon's API client and the API server's readiness
// probe, their requests counted in m, and serves the daemon's metrics
// (--metrics-*), whose guard asks the same API server, until ctx ends.
func apiClient(ctx context.Context, o options, m *metrics.Metrics, log *zap.Logger) (kubeapi.API, *kube.Readiness, error) {
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cfg.UserAgent = "nodeconfd/" + o.nodeName
	cfg.QPS, cfg.Burst = kube.QPS, kube.Burst
	m.CountRequests(cfg)
	kapi, err := kubeapi.NewAPI(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("building the API client: %w", err)
	}
	ready, err := kube.NewReadiness(cfg)
	if err != nil {
		return nil, nil, err
	}
	m.Registry.MustRegister(metrics.BuildInfo("nodeconfd", version, buildRevision()))
	serveOpts, err := o.metrics.options(cfg, o.nodeName, nil, log)
	if err != nil {
		return nil, nil, err
	}
	serveRegistry(ctx, m.Registry, serveOpts, log)
	return kapi, ready, nil
}

// restConfig is the in-cluster config, or --kubeconfig's.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config (or pass --kubeconfig): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading --kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}
