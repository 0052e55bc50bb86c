package daemon

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// pausedBefore keeps a paused node whose next update has not started (no
// update under way) idle on the config it runs: its drift monitor keeps
// running and reporting, and the status says the update waits for the
// pause (Updated=False, UpdateExecuted=False with reason Waiting and the
// pause's message), with a Paused Event once and WaitEnded when the pause
// goes. The Node's watch brings the loop back when the annotation changes.
// An update already under way waits in its own gate instead (phases.Gated).
func (d *Daemon) pausedBefore(ctx context.Context, rec *progress.Record, current, desired string) (bool, error) {
	if d.Env.Waits == nil || current == "" || (rec != nil && !rec.Done(progress.StepResume)) {
		return false, nil
	}
	h, paused := d.Env.Waits.Paused()
	if !paused {
		if d.pausedSince != (time.Time{}) {
			d.note("WaitEnded", fmt.Sprintf("Update to %s no longer waits (%s for %s)", desired, phases.HoldPaused,
				d.Now().Sub(d.pausedSince).Round(time.Second)))
			d.pausedSince = time.Time{}
			d.waiting("")
		}
		return false, nil
	}
	if err := d.watchWhilePaused(ctx, current); err != nil {
		return true, err
	}
	d.status.Set(status.Updated, metav1.ConditionFalse, status.Updated,
		fmt.Sprintf("Node needs update from %s to %s", current, desired))
	d.status.Set(status.UpdateExecuted, metav1.ConditionFalse, status.ReasonWaiting, h.Message)
	if err := d.status.Flush(ctx); err != nil {
		return true, fmt.Errorf("writing MachineConfigNode status: %w", err)
	}
	if d.pausedSince == (time.Time{}) {
		d.pausedSince = d.Now()
		d.waiting(phases.HoldPaused)
		d.note(phases.HoldPaused, fmt.Sprintf("Update to %s waits: %s", desired, h.Message))
		d.Log.Info("Node is paused; its update waits", zap.String("node", d.node.Name), zap.String("config", desired),
			zap.String("why", h.Message))
	}
	return true, nil
}

// watchWhilePaused keeps the drift monitor on the config the node runs.
func (d *Daemon) watchWhilePaused(ctx context.Context, current string) error {
	if d.drift.config == current {
		return nil
	}
	cfg, err := d.current(ctx, current)
	if err != nil {
		return err
	}
	if err := d.drift.Watch(ctx, cfg); err != nil {
		return err
	}
	d.onDrift(ctx, phases.CheckOnDisk(ctx, d.Env.Host, d.Env.Units, cfg))
	return nil
}

func (d *Daemon) note(reason, msg string) {
	if d.events != nil {
		d.events.Event(true, false, reason, msg)
	}
}
