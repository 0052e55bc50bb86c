package daemon

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// idle makes sure the drift monitor watches the config the node runs. It
// costs one GET of that config when the monitor is not already on it, and no
// request otherwise. Idling runs at each idle pass; the first time the node
// idles after a start or an update, Settled runs.
func (d *Daemon) idle(ctx context.Context, current string) error {
	if err := d.markUpdated(ctx, current); err != nil {
		return err
	}
	if d.drift.config != current {
		cfg, err := d.current(ctx, current)
		if err != nil {
			return err
		}
		if err := d.drift.Watch(ctx, cfg); err != nil {
			return err
		}
		d.Log.Info("Node is up to date; config drift monitor running", zap.String("node", d.node.Name),
			zap.String("config", current), zap.Int("files", len(cfg.Files)), zap.Int("units", len(cfg.Units)))
		// A drift found while the daemon was down shows at once.
		d.onDrift(ctx, phases.CheckOnDisk(ctx, d.Env.Host, d.Env.Units, cfg))
	}
	if d.Idling != nil {
		d.Idling()
	}
	if d.settledOn != current {
		d.settledOn = current
		if d.Settled != nil {
			d.Settled()
		}
	}
	return nil
}

// restageFinished stages again the status of the update rec finished on
// current, when the status still shows a phase of it under way (Unknown): a
// crash came between the record of its last step and its last status write.
// Nothing is staged otherwise, so an idle pass after an update that wrote
// its status writes nothing more.
func (d *Daemon) restageFinished(rec *progress.Record, current string) {
	if rec == nil || rec.Desired != current || !rec.Done(progress.StepResume) {
		return
	}
	for _, c := range d.status.Conditions() {
		if c.Status == metav1.ConditionUnknown {
			phases.RestageFinished(d.phaseList(), rec, d.status)
			d.Log.Info("The finished update's last status was not written; writing it again",
				zap.String("node", d.node.Name), zap.String("config", current), zap.String("condition", c.Type))
			return
		}
	}
}

// markUpdated reports a node that runs its desired config as Updated, once:
// a node registered at its current config, or one whose status was lost.
// A node with no state annotation yet (it was given its configs before
// its first daemon ran) gets state Done, as the upstream daemon writes at
// its first run: the pool controller counts a node without it as
// unavailable. A state the daemon wrote (Degraded for a drift) is left to
// the code that wrote it.
func (d *Daemon) markUpdated(ctx context.Context, current string) error {
	var rep phases.NodeReport
	if d.node.Annotations[names.State] == "" {
		rep.State = phases.StateDone
		d.Log.Info("Node runs its desired config; state Done", zap.String("node", d.node.Name), zap.String("config", current))
	}
	cur, _ := d.status.Versions()
	if c := d.status.Find(status.Updated); c == nil || c.Status != metav1.ConditionTrue || cur != current {
		d.stageUpdated(current)
	}
	return d.reporting().Send(ctx, rep)
}

// current returns the config the node runs: the copy kept on the node,
// else the API server's, which is then kept on the node (a node last
// updated by an older daemon, or moved to this config by someone else).
func (d *Daemon) current(ctx context.Context, name string) (plan.Config, error) {
	mc, why, err := phases.CurrentConfig(ctx, d.Env.Host, d.Env.Configs, name)
	if err != nil {
		return plan.Config{}, err
	}
	cfg, err := plan.ParseWithLimits(mc, d.Env.Limits)
	if err != nil || why == "" {
		return cfg, err
	}
	d.Log.Info("Keeping the current config on the node", zap.String("node", d.node.Name), zap.String("config", name),
		zap.String("why", why))
	if err := phases.SaveApplied(d.Env.Host, mc); err != nil {
		return plan.Config{}, err
	}
	return cfg, nil
}

// Watch implements phases.Drift: it (re)starts the drift monitor on cfg.
func (s *driftState) Watch(ctx context.Context, cfg plan.Config) error {
	if s.monitor == nil {
		return nil
	}
	s.config = cfg.Name
	return s.monitor.Watch(ctx, cfg)
}

func (d *Daemon) stopDrift() {
	if d.drift.monitor != nil {
		d.drift.monitor.Stop()
	}
	d.drift.config = ""
}

// DriftChanged is the drift monitor's callback; it hands the result to the
// daemon's loop.
func (d *Daemon) DriftChanged(err error) {
	select {
	case d.drift.changed <- err:
	default:
		// The loop has a result it has not read; replace it with the newer one.
		select {
		case <-d.drift.changed:
		default:
		}
		d.drift.changed <- err
	}
}

// onDrift reports a drift (err != nil) or its end (err == nil) in the
// NodeDegraded condition, the state annotation and an Event.
func (d *Daemon) onDrift(ctx context.Context, err error) {
	if d.status == nil || (err == nil && d.drift.err == nil) {
		return
	}
	if err != nil && d.drift.err != nil && err.Error() == d.drift.err.Error() {
		return
	}
	d.drift.err = err
	if err != nil {
		msg := fmt.Sprintf("Error: config drift from %s: %v", d.drift.config, err)
		if c := d.status.Find(status.NodeDegraded); c != nil && c.Status == metav1.ConditionTrue &&
			c.Reason == ReasonConfigDrift && c.Message == msg {
			return // reported already
		}
		d.Log.Warn("Config drift detected", zap.String("node", d.node.Name), zap.String("config", d.drift.config),
			zap.Error(err))
		phases.ReportDegraded(ctx, d.reporting(), d.Log,
			phases.Degraded{State: phases.StateDegraded, Reason: ReasonConfigDrift, Message: msg})
		return
	}
	if !d.status.Set(status.NodeDegraded, metav1.ConditionFalse, status.ReasonHealthy, status.HealthyMessage) {
		return
	}
	d.Log.Info("Config drift cleared", zap.String("node", d.node.Name), zap.String("config", d.drift.config))
	cleared := phases.NodeReport{State: phases.StateDone, Event: phases.Event{OnNode: true, Reason: "ConfigDriftCleared",
		Message: "Node matches config " + d.drift.config + " again"}}
	if werr := d.reporting().Send(ctx, cleared); werr != nil {
		d.Log.Error("Cannot report the end of the config drift", zap.Error(werr))
	}
}

// reporting is where the daemon's own reports go, outside an update: the
// same Stager as the update's runner.
func (d *Daemon) reporting() phases.Reporting {
	return phases.Reporting{Nodes: d.API, Status: d.status, Events: d.events}
}

// ReasonConfigDrift is NodeDegraded's reason while the node drifted from
// the config it runs.
const ReasonConfigDrift = "ConfigDrift"
