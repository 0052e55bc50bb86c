package phases

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Node states written to the state annotation (package names, which the
// controller reads them from).
const (
	StateDone           = names.StateDone
	StateWorking        = names.StateWorking
	StateDegraded       = names.StateDegraded
	StateUnreconcilable = names.StateUnreconcilable
)

// Validate checks the on-disk state against the desired config.
func Validate() Step {
	return Step{
		Name: progress.StepValidate,
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			cfg := d.Update().Desired
			if err := CheckOnDisk(ctx, d.Ports().Host, d.Ports().Units, cfg); err != nil {
				return Outcome{}, fmt.Errorf("validating the node against %s: %w", d.Update().DesiredName, err)
			}
			return Outcome{Message: fmt.Sprintf("Validated %s and %s", plan.Plural(len(cfg.Files), "file"), plan.Plural(len(cfg.Units), "unit"))}, nil
		},
	}
}

// CheckOnDisk validates every file's contents, mode and owner, every unit and
// its enablement, and the SSH keys of the config against the node.
func CheckOnDisk(ctx context.Context, host Host, units Units, cfg plan.Config) error {
	var errs []error
	for _, p := range plan.SortedKeys(cfg.Files) {
		if err := host.CheckFile(cfg.Files[p]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, n := range plan.SortedKeys(cfg.Units) {
		u := cfg.Units[n]
		if err := host.CheckUnit(u); err != nil {
			errs = append(errs, err)
		}
		if err := CheckEnablement(ctx, units, u); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range plan.SortedKeys(cfg.SSHKeys) {
		if err := host.CheckSSHKeys(name, cfg.SSHKeys[name].Keys); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Uncordon makes the node schedulable again, only if this daemon cordoned
// it.
func Uncordon() Step {
	return Step{
		Name: progress.StepUncordon, Show: Show{Condition: status.Uncordoned, Starting: "Uncordoning node"},
		Needed: func(d Data) (bool, string) {
			if d.Progress().Cordon.ByUs {
				return true, ""
			}
			if d.Update().Action.NeedsDrain() {
				return false, "Node was cordoned before the update; left cordoned"
			}
			return false, "Node was not cordoned for this update"
		},
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			if err := d.Ports().Cluster.Uncordon(ctx); err != nil {
				return Outcome{}, err
			}
			d.Progress().Cordon.ByUs = false
			return Outcome{Message: "Uncordoned node " + d.Update().Node}, nil
		},
	}
}

// SetCurrent records the node at its new config: it writes the node's currentConfig and state=Done annotations, keeps the
// config on the node and settles status.configVersion.current.
func SetCurrent() Step {
	return Step{
		Name: progress.StepSetCurrent,
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			u := d.Update()
			if err := commitCurrent(ctx, d, u.DesiredName, u.DesiredObject); err != nil {
				return Outcome{}, err
			}
			msg := "Node is running config " + u.DesiredName
			if v := d.Progress().Step(progress.StepValidate); v != nil {
				msg += " (" + v.Message + ")"
			}
			return Outcome{Message: msg, Settles: Settles{Current: u.DesiredName}}, nil
		},
	}
}

// Resume restarts the config drift monitor and marks the node updated.
func Resume() Step {
	return Step{
		Name: progress.StepResume, Show: Show{Quick: true},
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			u := d.Update()
			if d.Ports().Drift != nil {
				if err := d.Ports().Drift.Watch(ctx, u.Desired); err != nil {
					return Outcome{}, fmt.Errorf("starting the config drift monitor: %w", err)
				}
			}
			return Outcome{Message: "Config drift monitor running; node resumed normal operation", Settles: Settles{
				Conditions: []Condition{
					condition(status.NodeDegraded, metav1.ConditionFalse, status.ReasonHealthy, status.HealthyMessage),
					condition(status.Updated, metav1.ConditionTrue, status.ReasonNodeUpgradeComplete,
						status.CompletedMessage(u.DesiredName)),
				}}}, nil
		},
	}
}
