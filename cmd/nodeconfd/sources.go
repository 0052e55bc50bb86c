package main

import (
	"context"
	"sync/atomic"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/disruption"
	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/waits"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// startSources starts the watches beside the node's own: the waits' (the
// windows' ConfigMap) and the node disruption policy's.
func startSources(ctx context.Context, o options, api *kube.Client, objects *kube.Watch,
	log *zap.Logger) (*waits.Source, func() (plan.Policy, error), error) {
	holds, err := o.waits.source(o, api, objects)
	if err != nil {
		return nil, nil, err
	}
	if holds.Alerts, err = o.waits.alerts.gate(log); err != nil {
		return nil, nil, err
	}
	holds.Start(ctx)
	source, err := policySource(ctx, o, api, log)
	return holds, source, err
}

// drainer is the node's drainer, as the flags set it.
func drainer(o options, kapi kubeapi.API, log *zap.Logger, fault func(string)) *drain.Drainer {
	return &drain.Drainer{Client: kapi, NodeName: o.nodeName, Timeout: o.drainTimeout,
		FailOnTimeout: o.drainTimeoutAction == "fail", EvictUnowned: o.evictUnowned, Last: o.drainLast,
		Log: log.Named("drain"), Fault: fault, Surge: drain.SurgeOptions{Max: o.surgeMax, Namespace: o.namespace}}
}

// workloadEvents records the surges' Events on their workloads, once the
// daemon's Events recorder runs (before any drain).
func workloadEvents(p *atomic.Pointer[kubeapi.Events]) func(corev1.ObjectReference, bool, string, string) {
	return func(ref corev1.ObjectReference, warning bool, reason, msg string) {
		if e := p.Load(); e != nil {
			e.EventOn(ref, warning, reason, msg)
		}
	}
}

// restoreSurges puts back the replicas of surges a killed daemon of this
// node left behind, in the background: the API server may not answer yet,
// and the next drain retries.
func restoreSurges(ctx context.Context, d *drain.Drainer, log *zap.Logger) {
	go func() {
		if err := d.RestoreSurges(ctx); err != nil {
			log.Warn("Surges left behind not all put back; retried before the next drain", zap.String("node", d.NodeName),
				zap.Error(err))
		}
	}()
}

// policySource is the cluster's node disruption policy, watched, unless
// --node-disruption-policy gives one (then nil: Env.Policy is it).
func policySource(ctx context.Context, o options, api *kube.Client, log *zap.Logger) (func() (plan.Policy, error), error) {
	if o.policyFile != "" {
		log.Info("Using the node disruption policy of a file, not the cluster's", zap.String("node", o.nodeName),
			zap.String("file", o.policyFile))
		return nil, nil
	}
	res, err := kubeapi.MachineConfigurations(api.API)
	if err != nil {
		return nil, err
	}
	s := &disruption.Source{Resource: res, Retry: api.Retry(), Log: log.Named("policy").With(zap.String("node", o.nodeName))}
	s.Start(ctx)
	return s.Policy, nil
}
