package daemon

import (
	"context"
	"fmt"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// idle makes sure the drift monitor watches the config the node runs. It
// costs one GET of that config when the monitor is not already on it, and no
// request otherwise. The first time the node idles after a start or an
// update, Settled runs.
func (d *Daemon) idle(ctx context.Context, current string) error {
	if err := d.markUpdated(ctx, current); err != nil {
		return err
	}
	if d.drift.config != current {
		cfg, err := d.current(ctx, current)
		if err != nil {
			return err
		}
		if err := d.Watch(ctx, cfg); err != nil {
			return err
		}
		d.drift.config = current
		d.Log.Info("Node is up to date; config drift monitor running", zap.String("node", d.node.Name),
			zap.String("config", current), zap.Int("files", len(cfg.Files)), zap.Int("units", len(cfg.Units)))
		// A drift found while the daemon was down shows at once.
		d.onDrift(ctx, checkDrift(d.Env.Host, d.Env.Units, cfg))
	}
	if d.settledOn != current {
		d.settledOn = current
		if d.Settled != nil {
			d.Settled()
		}
	}
	return nil
}

// markUpdated reports a node that runs its desired config as Updated, once:
// a node registered at its current config, or one whose status was lost.
func (d *Daemon) markUpdated(ctx context.Context, current string) error {
	cur, _ := d.statusVersions()
	if c := status.Find(d.mcn.Status.Conditions, status.Updated); c != nil && c.Status == metav1.ConditionTrue && cur == current {
		return nil
	}
	conds := append([]metav1.Condition(nil), d.mcn.Status.Conditions...)
	status.Set(&conds, updatedCondition(current, metav1.NewTime(d.Now().Truncate(time.Second))))
	if err := d.API.WriteStatus(ctx, conds, current, current); err != nil {
		return fmt.Errorf("writing MachineConfigNode status: %w", err)
	}
	d.mcn.Status.Conditions = conds
	d.setVersions(current, current)
	return nil
}

func updatedCondition(config string, now metav1.Time) metav1.Condition {
	return metav1.Condition{Type: status.Updated, Status: metav1.ConditionTrue,
		Reason: status.ReasonNodeUpgradeComplete, Message: "Node has completed update to config " + config,
		LastTransitionTime: now}
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
func (d *Daemon) Watch(ctx context.Context, cfg plan.Config) error {
	if d.Drift == nil {
		return nil
	}
	d.drift.config = cfg.Name
	return d.Drift.Watch(ctx, cfg)
}

func (d *Daemon) stopDrift() {
	if d.Drift != nil {
		d.Drift.Stop()
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
	if d.mcn == nil || (err == nil && d.drift.err == nil) {
		return
	}
	if err != nil && d.drift.err != nil && err.Error() == d.drift.err.Error() {
		return
	}
	d.drift.err = err
	conds := append([]metav1.Condition(nil), d.mcn.Status.Conditions...)
	now := metav1.NewTime(d.Now().Truncate(time.Second))
	state, reason := phases.StateDone, ""
	c := metav1.Condition{Type: status.NodeDegraded, Status: metav1.ConditionFalse, Reason: status.ReasonHealthy,
		Message: "Node is healthy", LastTransitionTime: now}
	if err != nil {
		msg := fmt.Sprintf("Error: config drift from %s: %v", d.drift.config, err)
		c = metav1.Condition{Type: status.NodeDegraded, Status: metav1.ConditionTrue, Reason: "ConfigDrift",
			Message: msg, LastTransitionTime: now}
		state, reason = phases.StateDegraded, truncate(msg, 1024)
		d.Log.Warn("Config drift detected", zap.String("node", d.node.Name), zap.String("config", d.drift.config),
			zap.Error(err))
	} else {
		d.Log.Info("Config drift cleared", zap.String("node", d.node.Name), zap.String("config", d.drift.config))
	}
	if !status.Set(&conds, c) {
		return
	}
	if aerr := d.API.SetNodeState(ctx, "", state, reason); aerr != nil {
		d.Log.Error("Cannot write the node's state annotation", zap.Error(aerr))
	}
	cur, des := d.statusVersions()
	if werr := d.API.WriteStatus(ctx, conds, cur, des); werr != nil {
		d.Log.Error("Cannot write drift status", zap.Error(werr))
		return
	}
	d.mcn.Status.Conditions = conds
	if d.events != nil {
		if err != nil {
			d.events.Event(true, true, "ConfigDrift", c.Message)
		} else {
			d.events.Event(true, false, "ConfigDriftCleared", "Node matches config "+d.drift.config+" again")
		}
	}
}

func checkDrift(host phases.Host, units phases.Units, cfg plan.Config) error {
	return phases.CheckOnDisk(context.Background(), host, units, cfg)
}

// adopt takes a node that has no currentConfig (or, after a lost
// progress record, one not known to be at it): when its on-disk state
// already matches the desired config, the config is adopted without an
// update. It reports false when an update is needed instead.
func (d *Daemon) adopt(ctx context.Context, desired string) (bool, error) {
	lost := d.recordLost()
	mc, cfg, err := d.adoptConfig(ctx, desired, lost)
	if err != nil {
		r := d.runner(progress.New("", desired))
		r.Start(d.node.Name)
		return false, d.fail(ctx, r, err)
	}
	log := d.Log.With(zap.String("node", d.node.Name), zap.String("config", desired))
	if err := phases.CheckOnDisk(ctx, d.Env.Host, d.Env.Units, cfg); err != nil {
		log.Info("Node is not known to run a config and differs from the desired config; updating it", zap.Error(err))
		return false, nil
	}
	if err := phases.CheckOS(ctx, d.Env.OS, cfg); err != nil {
		log.Info("Node is not known to run a config and its booted OS differs from the desired config; updating it", zap.Error(err))
		return false, nil
	}
	if lost {
		if err := d.giveBackAfterLostRecord(ctx); err != nil {
			return false, err
		}
	}
	if err := d.API.SetNodeState(ctx, desired, phases.StateDone, ""); err != nil {
		return false, err
	}
	if err := phases.SaveApplied(d.Env.Host, mc); err != nil {
		return false, err
	}
	conds := append([]metav1.Condition(nil), d.mcn.Status.Conditions...)
	now := metav1.NewTime(d.Now().Truncate(time.Second))
	status.Set(&conds, metav1.Condition{Type: status.Updated, Status: metav1.ConditionTrue,
		Reason: status.ReasonNodeUpgradeComplete, Message: "Node has completed update to config " + desired +
			" (adopted: the node already matched it)", LastTransitionTime: now})
	if c := status.Find(conds, status.NodeDegraded); c != nil && c.Status != metav1.ConditionFalse {
		status.Set(&conds, metav1.Condition{Type: status.NodeDegraded, Status: metav1.ConditionFalse,
			Reason: status.ReasonHealthy, Message: "Node is healthy", LastTransitionTime: now})
	}
	if err := d.API.WriteStatus(ctx, conds, desired, desired); err != nil {
		return false, fmt.Errorf("writing MachineConfigNode status: %w", err)
	}
	d.mcn.Status.Conditions = conds
	d.setVersions(desired, desired)
	log.Info("Adopted the desired config: the node already matches it")
	if err := d.Watch(ctx, cfg); err != nil {
		return true, err
	}
	return true, nil
}

// adoptConfig fetches the config to adopt: from the API server, or, when
// a lost record leaves a node whose currentConfig is the desired config
// unverified, the copy kept on the node first.
func (d *Daemon) adoptConfig(ctx context.Context, desired string, lost bool) (*mcfgv1.MachineConfig, plan.Config, error) {
	var mc *mcfgv1.MachineConfig
	var err error
	if lost && d.node.Annotations[kube.CurrentConfig] == desired {
		mc, _, err = phases.CurrentConfig(ctx, d.Env.Host, d.Env.Configs, desired)
	} else if mc, err = d.Env.Configs.MachineConfig(ctx, desired); err != nil {
		err = fmt.Errorf("fetching MachineConfig %q: %w", desired, err)
	}
	if err != nil {
		return nil, plan.Config{}, err
	}
	cfg, err := plan.ParseWithLimits(mc, d.Env.Limits)
	return mc, cfg, err
}
