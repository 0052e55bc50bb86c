package phases

import (
	"context"
	"fmt"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// UnsupportedError is a change this node cannot make (an OS change with no
// OS updater). Like an unreconcilable change, it is refused in prepare.
// Object and Field, when set, name the desired MachineConfig and the field
// that asks for the change ("spec.kernelArguments").
type UnsupportedError struct{ Object, Field, Msg string }

func (e *UnsupportedError) Error() string {
	if e.Object == "" {
		return e.Msg
	}
	return fmt.Sprintf("MachineConfig %q: %s: %s", e.Object, e.Field, e.Msg)
}

// Prepare fetches both rendered configs, validates them, diffs them, checks
// the OS change against the booted deployment and chooses the post action.
// Nothing on the node is touched. The planned OS change is kept in the
// progress record, so a restart (after the reboot, say) reloads the same
// plan.
func Prepare() Phase {
	return Phase{
		Name: progress.StepPrepare, Group: status.UpdatePrepared, Condition: status.UpdateCompatible,
		Starting: "Checking that the config can be applied in place",
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			// A name the node does not accept (a fragment, another pool's
			// config) is refused before it is even fetched.
			if err := d.ConfigRule().Check(d.Update().DesiredName); err != nil {
				return Outcome{}, err
			}
			if err := Plan(ctx, d, nil); err != nil {
				return Outcome{}, err
			}
			u := d.Update()
			d.Progress().OS = &progress.OSPlan{FromKernelArgs: u.Current.KernelArguments, ImageChanged: u.Diff.OSImageChanged,
				KernelArgsRemoved: u.Diff.KernelArgsRemoved, KernelArgsAdded: u.Diff.KernelArgsAdded}
			d.Progress().Action = saveAction(u.Action)
			d.SetDesiredVersion(u.DesiredName)
			return Outcome{Message: plan.Summary(u.Diff, u.Action)}, nil
		},
		Reload: func(ctx context.Context, d Data) error { return Plan(ctx, d, d.Progress().OS) },
	}
}

// Plan fills the update's configs, diff and post action. The OS change is
// saved when not nil (a reload), else checked against the booted OS.
func Plan(ctx context.Context, d Data, saved *progress.OSPlan) error {
	u := d.Update()
	desired, err := fetchDesired(ctx, d)
	if err != nil {
		return err
	}
	var current plan.Config
	if u.CurrentName != "" {
		if current, err = fetchCurrent(ctx, d, u.CurrentName); err != nil {
			return err
		}
	}
	diff, err := Decide(current, desired)
	if err != nil {
		return err
	}
	if saved != nil {
		diff.OSImageChanged = saved.ImageChanged
		diff.KernelArgsRemoved, diff.KernelArgsAdded = saved.KernelArgsRemoved, saved.KernelArgsAdded
	} else if err := checkOS(ctx, d.OS(), u.CurrentName == "", current, desired, d.Progress().EarlierKernelArgs, &diff); err != nil {
		return err
	} else if err := d.Host().Preflight(current, desired, diff); err != nil {
		return err // the node's side, before the slot, the cordon, a write
	}
	u.Current, u.Desired, u.Diff = current, desired, diff
	if saved != nil && d.Progress().Action != nil {
		u.Action = restoreAction(d.Progress().Action)
		return nil
	}
	policy, err := d.Policy()
	if err != nil {
		return err
	}
	u.Action = policy.PostAction(current, desired, diff)
	return nil
}

// saveAction is the record's copy of the chosen post action.
func saveAction(a plan.PostAction) *progress.ActionPlan {
	p := &progress.ActionPlan{Reboot: a.Kind == plan.ActionReboot, Drain: a.Drain, DrainReason: a.DrainReason}
	for _, x := range a.Actions {
		p.Actions = append(p.Actions, progress.Action{Type: string(x.Type), Unit: x.Unit})
	}
	return p
}

// restoreAction is the post action a record kept.
func restoreAction(p *progress.ActionPlan) plan.PostAction {
	var as []plan.Action
	for _, x := range p.Actions {
		as = append(as, plan.Action{Type: plan.ActionType(x.Type), Unit: x.Unit})
	}
	return plan.Restored(p.Reboot, as, p.Drain, p.DrainReason, nil)
}

// NoOSUpdaterMessage refuses an OS change on a node with no OS updater.
const NoOSUpdaterMessage = "OS image and kernel argument changes need rpm-ostree or bootc; this node has neither"

// checkOS refuses OS changes the node cannot make, and plans the OS change
// against the booted deployment: the image is changed when the node does
// not run the desired one (also when the configs agree: an earlier boot
// fell back), and the kernel arguments are edited from the booted ones when
// those are not the current config's (no current config, or a fallback).
func checkOS(ctx context.Context, osu OSUpdater, adopting bool, current, desired plan.Config, earlier []string, diff *plan.Diff) error {
	if osu == nil {
		if diff.OSChanged() {
			return &UnsupportedError{Object: desired.Name, Field: osField(*diff), Msg: NoOSUpdaterMessage}
		}
		return nil
	}
	if desired.OSImageURL == "" && len(desired.KernelArguments)+len(current.KernelArguments)+len(earlier) == 0 &&
		!diff.OSChanged() {
		return nil // the configs manage no OS state: nothing to plan against the booted OS
	}
	b, err := osu.Booted(ctx, desired.OSImageURL)
	if err != nil {
		return fmt.Errorf("reading the booted OS with %s: %w", osu.Name(), err)
	}
	PlanAgainstBooted(b, adopting, current, desired, earlier, diff)
	if !diff.OSChanged() {
		return nil
	}
	image := ""
	if diff.OSImageChanged {
		image = desired.OSImageURL
	}
	kargs := len(diff.KernelArgsRemoved)+len(diff.KernelArgsAdded) > 0
	if err := osu.Supports(image, kargs); err != nil {
		field := osField(*diff)
		if image != "" && osu.Supports(image, false) != nil {
			field = "spec.osImageURL"
		}
		return &UnsupportedError{Object: desired.Name, Field: field,
			Msg: fmt.Sprintf("this node's OS updater %s cannot make the change: %v", osu.Name(), err)}
	}
	return nil
}

// osField names the field whose change needs the OS updater: the image
// when it changes, else the kernel arguments.
func osField(diff plan.Diff) string {
	if diff.OSImageChanged {
		return "spec.osImageURL"
	}
	return "spec.kernelArguments"
}

// PlanAgainstBooted corrects diff's OS change with the booted deployment
// b. The image changes exactly when b does not run the desired one. When b
// lacks the current config's kernel arguments, when there is no current
// config (adopting), or when an earlier unfinished update may have left
// its own (earlier: their kernel arguments), the kernel argument edit is
// made from b's: add what the desired config has more of, remove what the
// current config, the diff or the earlier configs name and b has more of
// than desired. Unknown kernel arguments (b.KernelArgs nil) leave the
// config diff.
func PlanAgainstBooted(b BootedOS, adopting bool, current, desired plan.Config, earlier []string, diff *plan.Diff) {
	diff.OSImageChanged = desired.OSImageURL != "" && !b.IsImage
	kb := BootedOS{IsImage: true, KernelArgs: b.KernelArgs}
	if b.KernelArgs == nil ||
		(!adopting && len(earlier) == 0 && BootedMismatch(kb, "", current.KernelArguments, nil) == "") {
		return
	}
	named := append(append(append([]string(nil), current.KernelArguments...), diff.KernelArgsRemoved...), earlier...)
	diff.KernelArgsAdded = plan.MultisetMinus(desired.KernelArguments, b.KernelArgs)
	diff.KernelArgsRemoved = nil
	if adopting {
		return
	}
	for _, k := range dedupe(named) {
		for n := count(b.KernelArgs, k) - count(desired.KernelArguments, k); n > 0; n-- {
			diff.KernelArgsRemoved = append(diff.KernelArgsRemoved, k)
		}
	}
}
