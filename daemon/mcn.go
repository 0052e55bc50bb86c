package daemon

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// ensureMCN creates the MachineConfigNode when missing (with every condition
// at False/NotYetOccurred) and keeps its spec in step with the node. The
// status is loaded into the daemon's stager once; from then on the
// stager's copy is authoritative: the watch cache may lag behind the
// daemon's writes.
func (d *Daemon) ensureMCN(ctx context.Context, current, desired string) error {
	pool := d.pool
	mcn, ok := d.Watcher.MCN()
	created := false
	if !ok {
		var err error
		if mcn, created, err = d.API.EnsureMCN(ctx, status.NewMCN(d.node.Name, pool, desired), d.node); err != nil {
			return err
		}
		d.mcn = nil
	} else {
		updated, err := d.API.SyncSpec(ctx, mcn, d.node, pool, desired) // no request when in step
		if err != nil {
			return err
		}
		mcn = updated
	}
	if d.mcn != nil {
		d.mcn.Spec, d.mcn.Generation = mcn.Spec, mcn.Generation
		d.status.SetGeneration(mcn.Generation)
		return nil
	}
	d.mcn = mcn
	if d.API.StatusWritten != nil { // the metrics start from the status found
		d.API.StatusWritten(mcn.Status.Conditions)
	}
	snap := status.Snapshot{Conditions: mcn.Status.Conditions, ObservedGeneration: mcn.Generation,
		IrreconcilableChanges: mcn.Status.IrreconcilableChanges}
	if cv := mcn.Status.ConfigVersion; cv != nil {
		snap.Current, snap.Desired = cv.Current, cv.Desired
	}
	d.status = status.NewStager(d.API, d.Now, snap)
	if d.Events != nil && d.events == nil {
		d.events = d.Events(string(mcn.UID))
	}
	if created || d.status.Empty() {
		d.status.Reset()
		d.status.WithImageMode(d.ImageModeStatus)
		if current != "" && current == desired {
			// A node registered at its config: say so in the same write.
			d.stageUpdated(current)
		}
		if err := d.reporting().Send(ctx, phases.NodeReport{}); err != nil {
			return fmt.Errorf("registering MachineConfigNode %s: %w", d.node.Name, err)
		}
		d.Log.Info("Registered MachineConfigNode", zap.String("node", d.node.Name), zap.String("pool", pool),
			zap.Bool("created", created))
	}
	// A daemon restarted with the other --image-mode-status (imagemode.go).
	if d.status.WithImageMode(d.ImageModeStatus) {
		if err := d.reporting().Send(ctx, phases.NodeReport{}); err != nil {
			return fmt.Errorf("switching the conditions of MachineConfigNode %s to --image-mode-status=%v: %w",
				d.node.Name, d.ImageModeStatus, err)
		}
	}
	if d.Ready != nil {
		select {
		case <-d.Ready:
		default:
			close(d.Ready)
		}
	}
	return nil
}

// stageUpdated stages Updated=True and the versions of a node that runs
// config (registered at it, or whose status was lost).
func (d *Daemon) stageUpdated(config string) {
	d.status.Set(status.Updated, metav1.ConditionTrue, status.ReasonNodeUpgradeComplete, status.CompletedMessage(config))
	d.status.SetVersions(config, config)
}
