package phases

import (
	"context"
	"fmt"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// UnsupportedError is a change this node cannot make (an OS change with no
// OS updater). Like an unreconcilable change, it is refused in prepare.
type UnsupportedError struct{ Msg string }

func (e *UnsupportedError) Error() string { return e.Msg }

// Prepare fetches both rendered configs, validates them, diffs them and
// chooses the post action. Nothing on the node is touched.
func Prepare() Phase {
	return Phase{
		Name: "prepare", Group: status.UpdatePrepared, Condition: status.UpdateCompatible,
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			if err := Plan(ctx, d); err != nil {
				return Outcome{}, err
			}
			u := d.Update()
			d.SetDesiredVersion(u.DesiredName)
			return Outcome{Message: plan.Summary(u.Diff, u.Action)}, nil
		},
		Reload: Plan,
	}
}

// Plan fills the update's configs, diff and post action.
func Plan(ctx context.Context, d Data) error {
	u := d.Update()
	desired, err := fetch(ctx, d, u.DesiredName)
	if err != nil {
		return err
	}
	var current plan.Config
	if u.CurrentName != "" {
		if current, err = fetch(ctx, d, u.CurrentName); err != nil {
			return err
		}
	}
	diff, err := plan.Compare(current, desired)
	if err != nil {
		return err
	}
	if diff.OSChanged() && d.OS() == nil {
		return &UnsupportedError{Msg: fmt.Sprintf(
			"MachineConfig %q changes spec.osImageURL or spec.kernelArguments: OS image changes need rpm-ostree or bootc; this node has neither",
			u.DesiredName)}
	}
	u.Current, u.Desired, u.Diff = current, desired, diff
	u.Action = d.Policy().PostAction(diff)
	return nil
}

func fetch(ctx context.Context, d Data, name string) (plan.Config, error) {
	mc, err := d.Configs().MachineConfig(ctx, name)
	if err != nil {
		return plan.Config{}, fmt.Errorf("fetching MachineConfig %q: %w", name, err)
	}
	return plan.Parse(mc)
}
