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

// observer returns the update's observer: next, and the Node lifecycle
// conditions' writer when --node-lifecycle-conditions is given.
func (o *options) observer(next phases.Observer, api *kube.Client, log *zap.Logger) phases.Observer {
	if !o.lifecycleConds {
		return next
	}
	return lifecycle.Observe(next, api, lifecycleWriteTimeout, log.Named("lifecycle"))
}
