package phases

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Adopt takes a node that is not known to run a config (no currentConfig,
// or a lost progress record): when its files, units, SSH keys and booted OS
// already match the desired config, the config is adopted without an
// update (currentConfig, state=Done, Updated=True) and the update ends here.
// Otherwise the update goes on, and writes the desired config.
func Adopt() Step {
	return Step{
		Name: progress.StepAdopt, Show: Show{Quick: true},
		Needed: func(d Data) (bool, string) {
			rec := d.Progress()
			switch {
			case rec.Done(progress.StepDetect): // a record of an older daemon, which adopted outside the list
				return false, "The update has begun"
			case d.Update().CurrentName != "":
				return false, "Node runs config " + d.Update().CurrentName
			case rec.Inherited.Replaced != nil:
				return false, "Node was being updated to " + rec.Inherited.Replaced.Desired
			}
			return true, ""
		},
		Run: adopt,
	}
}

// adoption is what the adoption's steps share: the config to adopt, and
// whether the node matched it.
type adoption struct {
	lost    bool
	mc      *mcfgv1.MachineConfig
	cfg     plan.Config
	matched bool
	// updating is the Adopt step's message when the node did not match.
	updating string
}

// adopt runs the adoption (Adoption, update.go) and ends the update when
// the node matched its desired config; else the update goes on.
func adopt(ctx context.Context, d Data) (Outcome, error) {
	u := d.Update()
	u.adoption = &adoption{lost: u.RecordLost}
	if err := d.RunSub(ctx, "adopt", &engine.Memory{}, Adoption()); err != nil {
		return Outcome{}, err
	}
	if !u.adoption.matched {
		return Outcome{Message: u.adoption.updating}, nil
	}
	return Outcome{Message: "Adopted " + u.DesiredName + ": the node already matched it", Complete: true}, nil
}

// adoptMatch compares the node's files, units, SSH keys and booted OS with
// the desired config.
func adoptMatch(ctx context.Context, d Data) (string, error) {
	u, a := d.Update(), d.Update().adoption
	mc, cfg, err := adoptConfig(ctx, d, a.lost)
	if err != nil {
		return "", err
	}
	a.mc, a.cfg = mc, cfg
	log := LogFrom(ctx, zap.NewNop())
	a.updating = "Node differs from " + u.DesiredName + "; updating it"
	if !a.lost {
		a.updating += updateFromApplied(ctx, d) // appliedname.go
	}
	if err := CheckOnDisk(ctx, d.Ports().Host, d.Ports().Units, cfg); err != nil {
		log.Info("Node is not known to run a config and differs from the desired config; updating it", zap.Error(err))
		return a.updating, nil
	}
	if err := CheckOS(ctx, d.Ports().OS, cfg); err != nil {
		log.Info("Node is not known to run a config and its booted OS differs from the desired config; updating it",
			zap.Error(err))
		return a.updating, nil
	}
	a.matched = true
	return "Node matches " + u.DesiredName, nil
}

// adopting is Needed of the adoption's steps after the match: only when
// the node matched.
func adopting(d Data) (bool, string) {
	if !d.Update().adoption.matched {
		return false, "Node differs from its desired config"
	}
	return true, ""
}

// adoptLiftCordon lifts the daemon's cordon after a lost record: the
// record that said whether the lost update held a cordon is gone.
func adoptLiftCordon(ctx context.Context, d Data) (string, error) {
	if err := d.Ports().Cluster.Uncordon(ctx); err != nil {
		return "", err
	}
	rec := d.Progress() // saved with the update's end (Complete)
	rec.Cordon = progress.Cordon{}
	return "Lifted the cordon of the lost update", nil
}

// adoptSetCurrent records the node at its desired config: currentConfig,
// state=Done; it settles Updated=True, NodeDegraded=False and its config
// versions (written by the runner as the update ends here: Complete).
func adoptSetCurrent(ctx context.Context, d Data) (Outcome, error) {
	u, a := d.Update(), d.Update().adoption
	if err := commitCurrent(ctx, d, u.DesiredName, a.mc); err != nil {
		return Outcome{}, err
	}
	LogFrom(ctx, zap.NewNop()).Info("Adopted the desired config: the node already matches it")
	return Outcome{Message: "Node runs " + u.DesiredName, Settles: Settles{
		Conditions: []Condition{
			condition(status.Updated, metav1.ConditionTrue, status.ReasonNodeUpgradeComplete,
				status.CompletedMessage(u.DesiredName)+" (adopted: the node already matched it)"),
			condition(status.NodeDegraded, metav1.ConditionFalse, status.ReasonHealthy, status.HealthyMessage),
		},
		Desired: u.DesiredName, Current: u.DesiredName,
	}}, nil
}

// adoptResume starts the config drift monitor on the adopted config.
func adoptResume(ctx context.Context, d Data) (string, error) {
	if d.Ports().Drift == nil {
		return "No drift monitor", nil
	}
	if err := d.Ports().Drift.Watch(ctx, d.Update().adoption.cfg); err != nil {
		return "", fmt.Errorf("starting the config drift monitor: %w", err)
	}
	return "Watching for drift", nil
}

// adoptConfig fetches the config to adopt: from the API server, or, when
// a lost record leaves a node whose currentConfig is the desired config
// unverified, the copy kept on the node first.
func adoptConfig(ctx context.Context, d Data, lost bool) (*mcfgv1.MachineConfig, plan.Config, error) {
	u := d.Update()
	var mc *mcfgv1.MachineConfig
	var err error
	if lost && u.NodeCurrent == u.DesiredName {
		mc, _, err = CurrentConfig(ctx, d.Ports().Host, d.Ports().Configs, u.DesiredName)
	} else if mc, err = d.Ports().Configs.MachineConfig(ctx, u.DesiredName); err != nil {
		err = fmt.Errorf("fetching MachineConfig %q: %w", u.DesiredName, err)
	}
	if err != nil {
		return nil, plan.Config{}, err
	}
	cfg, err := plan.ParseWithLimits(mc, d.Ports().Limits)
	return mc, cfg, err
}
