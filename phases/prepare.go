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
	if err := checkOS(ctx, d, desired, &diff); err != nil {
		return err
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

// NoOSUpdaterMessage refuses an OS change on a node with no OS updater.
const NoOSUpdaterMessage = "OS image changes need rpm-ostree or bootc; this node has neither"

// checkOS refuses OS changes the node cannot make, and marks the image as
// changed when the node does not run the desired image although the
// configs agree (an earlier update's boot fell back to the old one): the
// image is then staged again. It never unmarks a change, so a reload after
// the boot plans the same update.
func checkOS(ctx context.Context, d Data, desired plan.Config, diff *plan.Diff) error {
	osu := d.OS()
	if osu == nil {
		if diff.OSChanged() {
			return &UnsupportedError{Msg: NoOSUpdaterMessage}
		}
		return nil
	}
	if !diff.OSImageChanged && desired.OSImageURL != "" {
		b, err := osu.Booted(ctx, desired.OSImageURL)
		if err != nil {
			return fmt.Errorf("reading the booted OS with %s: %w", osu.Name(), err)
		}
		diff.OSImageChanged = !b.IsImage
	}
	if !diff.OSChanged() {
		return nil
	}
	kargs := len(diff.KernelArgsRemoved)+len(diff.KernelArgsAdded) > 0
	if err := osu.Supports(diff.OSImageChanged, kargs); err != nil {
		return &UnsupportedError{Msg: fmt.Sprintf("this node's OS updater %s cannot make the change: %v", osu.Name(), err)}
	}
	return nil
}
