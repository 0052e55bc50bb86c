package daemon

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// pause reports whether the node is paused, from the watch cache, and the
// hold's text; never paused without waits.
func (d *Daemon) pause() (phases.Hold, bool) {
	if d.Env.Waits == nil {
		return phases.Hold{}, false
	}
	return d.Env.Waits.Paused()
}

// waitPaused keeps a paused node whose next update has not started (no
// update under way: decidePass's passPaused) idle on the config it runs,
// current: its drift monitor keeps running and reporting, and the status
// says the update waits for the pause (Updated=False, UpdateExecuted=False
// with reason Waiting and the pause's message), with a Paused Event once
// (WaitEnded comes with the update, pauseEnded). The Node's watch brings
// the loop back when the annotation changes. An update already under way
// waits in its own gate instead (phases.WaitFirst, phases.Gate).
func (d *Daemon) waitPaused(ctx context.Context, current, desired string, h phases.Hold) error {
	if err := d.watchWhilePaused(ctx, current); err != nil {
		return err
	}
	d.status.Set(status.Updated, metav1.ConditionFalse, status.Updated,
		fmt.Sprintf("Node needs update from %s to %s", current, desired))
	d.status.Set(status.UpdateExecuted, metav1.ConditionFalse, status.ReasonWaiting, h.Message)
	var rep phases.NodeReport
	if d.pausedSince == (time.Time{}) { // the wait starts: said once
		d.pausedSince = d.Now()
		d.waiting(phases.HoldPaused)
		rep.Event = phases.Event{OnNode: true, Reason: phases.HoldPaused,
			Message: fmt.Sprintf("Update to %s waits: %s", desired, h.Message)}
		d.Log.Info("Node is paused; its update waits", zap.String("node", d.node.Name), zap.String("config", desired),
			zap.String("why", h.Message))
	}
	return d.reporting().Send(ctx, rep)
}

// pauseEnded marks the end of the pause that held the node's update
// before it started, as the update starts.
func (d *Daemon) pauseEnded(desired string) {
	if d.pausedSince == (time.Time{}) {
		return
	}
	d.note("WaitEnded", fmt.Sprintf("Update to %s no longer waits (%s for %s)", desired, phases.HoldPaused,
		d.Now().Sub(d.pausedSince).Round(time.Second)))
	d.pausedSince = time.Time{}
	d.waiting("")
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
