package phases

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

func adopt(ctx context.Context, d Data) (Outcome, error) {
	u := d.Update()
	lost := recordLost(d.Stager())
	mc, cfg, err := adoptConfig(ctx, d, lost)
	if err != nil {
		return Outcome{}, err
	}
	log := LogFrom(ctx, zap.NewNop())
	updating := Outcome{Message: "Node differs from " + u.DesiredName + "; updating it"}
	if !lost {
		updating.Message += updateFromApplied(ctx, d) // appliedname.go
	}
	if err := CheckOnDisk(ctx, d.Ports().Host, d.Ports().Units, cfg); err != nil {
		log.Info("Node is not known to run a config and differs from the desired config; updating it", zap.Error(err))
		return updating, nil
	}
	if err := CheckOS(ctx, d.Ports().OS, cfg); err != nil {
		log.Info("Node is not known to run a config and its booted OS differs from the desired config; updating it",
			zap.Error(err))
		return updating, nil
	}
	if lost {
		// The record that said whether the lost update held a cordon is
		// gone: lift the daemon's cordon.
		if err := d.Ports().Cluster.Uncordon(ctx); err != nil {
			return Outcome{}, err
		}
		rec := d.Progress() // saved with the update's end (Complete)
		rec.Cordon.ByUs, rec.Cordon.Own = false, false
	}
	if err := commitCurrent(ctx, d, u.DesiredName, mc); err != nil {
		return Outcome{}, err
	}
	st := d.Stager()
	st.Set(status.Updated, metav1.ConditionTrue, status.ReasonNodeUpgradeComplete,
		status.CompletedMessage(u.DesiredName)+" (adopted: the node already matched it)")
	if c := st.Find(status.NodeDegraded); c != nil && c.Status != metav1.ConditionFalse {
		st.Set(status.NodeDegraded, metav1.ConditionFalse, status.ReasonHealthy, status.HealthyMessage)
	}
	st.SetVersions(u.DesiredName, u.DesiredName) // written by the runner as the update ends here (Complete)
	log.Info("Adopted the desired config: the node already matches it")
	if d.Ports().Drift != nil {
		if err := d.Ports().Drift.Watch(ctx, cfg); err != nil {
			return Outcome{}, fmt.Errorf("starting the config drift monitor: %w", err)
		}
	}
	return Outcome{Message: "Adopted " + u.DesiredName + ": the node already matched it", Complete: true}, nil
}

// recordLost reports whether the daemon goes on without an unreadable
// progress record, not yet past an update or an adoption.
func recordLost(st *status.Stager) bool {
	c := st.Find(status.NodeDegraded)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == status.ReasonRecordUnreadable
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
