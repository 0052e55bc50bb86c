package main

import (
	"fmt"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/metrics"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// apiClient builds the daemon's API client and the API server's readiness
// probe, their requests counted in m, and returns the config they share.
func apiClient(o options, m *metrics.Metrics) (*rest.Config, kube.API, *kube.Readiness, error) {
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.UserAgent = "nodeconfd/" + o.nodeName
	cfg.QPS, cfg.Burst = kube.QPS, kube.Burst
	m.CountRequests(cfg)
	kapi, err := kube.NewAPI(cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("building the API client: %w", err)
	}
	ready, err := kube.NewReadiness(cfg)
	return cfg, kapi, ready, err
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
