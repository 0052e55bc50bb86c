package main

import (
	"flag"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/lifecycle"
	"github.com/nodeconfd/nodeconfd/phases"
)

// lifecycleWriteTimeout bounds one write of the Node lifecycle conditions:
// the update waits for it (lifecycle.Observe), so an API server that does
// not answer holds each phase that writes them at most this long.
const lifecycleWriteTimeout = 10 * time.Second

// addStatusFlags adds the flags that choose what the daemon reports
// besides the MachineConfigNode's standard conditions.
func addStatusFlags(fs *flag.FlagSet, o *options) {
	fs.BoolVar(&o.imageModeStatus, "image-mode-status", false,
		"also report AppliedFiles, ImagePulledFromRegistry and AppliedOSImage, the split of AppliedFilesAndOS that "+
			"OpenShift reports behind its ImageModeStatusReporting feature gate (TechPreviewNoUpgrade)")
	fs.BoolVar(&o.lifecycleConds, "node-lifecycle-conditions", false,
		"write the Node lifecycle conditions MaintenancePlanned, DrainInProgress, Drained and MaintenanceInProgress "+
			"(Kubernetes 1.37, KEP-5683, alpha: enable the API server's NodeLifecycleConditions feature gate) "+
			"from the update's phases; needs the nodes/status patch right of manifests/02-rbac.yaml")
}

// lifecycleWriter is the writer of the Node lifecycle conditions when
// --node-lifecycle-conditions is given; its hooks pass through when it is
// not (w nil).
type lifecycleWriter struct{ w *lifecycle.Writer }

func (o *options) lifecycleWriter(api *kube.Client, log *zap.Logger) lifecycleWriter {
	if !o.lifecycleConds {
		return lifecycleWriter{}
	}
	return lifecycleWriter{lifecycle.New(api, lifecycleWriteTimeout, log.Named("lifecycle"))}
}

// observer returns the update's observer: next, and the writer's.
func (l lifecycleWriter) observer(next phases.Observer) phases.Observer {
	if l.w == nil {
		return next
	}
	return l.w.Observe(next)
}

// cluster returns the cluster port, whose uncordon clears the conditions.
func (l lifecycleWriter) cluster(next phases.Cluster) phases.Cluster {
	if l.w == nil {
		return next
	}
	return l.w.Cluster(next)
}

// healthResult returns the health gate's observer, which clears the
// conditions once a rollback is kept.
func (l lifecycleWriter) healthResult(next func(string)) func(string) {
	if l.w == nil {
		return next
	}
	return l.w.HealthResult(next)
}

// idling is the daemon's Idling hook, nil without the writer.
func (l lifecycleWriter) idling() func() {
	if l.w == nil {
		return nil
	}
	return l.w.Idle
}
