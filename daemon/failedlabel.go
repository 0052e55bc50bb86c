package daemon

import (
	"context"

	"github.com/nodeconfd/nodeconfd/names"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
)

// syncFailedLabel keeps the node's failedConfigHash label in step with
// its failedConfig annotation, which is the truth (names.FailedConfigHashLabel),
// and removes both once the node is given another config (the report
// lapsed: it holds no one, and must not hold a later rollback to it):
// an administrator who removes the annotation to let the other nodes go on
// leaves the label, which this removes; a label lost (a node object
// re-created, an older daemon's annotation) is restored, so that the other
// nodes' label selector finds the failure. A failed patch is logged and
// tried again at the next change of the Node: the label is an index, the
// update does not wait for it.
func (d *Daemon) syncFailedLabel(ctx context.Context, node *corev1.Node) {
	patched, err := d.API.SyncFailedConfigLabel(ctx, node)
	switch {
	case err != nil:
		d.Log.Warn("Could not bring the failedConfigHash label in step with the failedConfig annotation",
			zap.String("node", node.Name), zap.Error(err))
	case patched:
		d.Log.Info("Brought the failedConfigHash label in step with the failedConfig annotation",
			zap.String("node", node.Name), zap.String("failed", node.Annotations[names.FailedConfig]),
			zap.String("config", node.Annotations[names.DesiredConfig]))
	}
}
