package phases

import (
	"context"
	"fmt"
	"slices"

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
func Prepare() Step {
	return Step{
		Name: progress.StepPrepare, Show: Show{Condition: status.UpdateCompatible, Starting: "Checking that the config can be applied in place"},
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			// A name the node does not accept (a fragment, another pool's
			// config) is refused before it is even fetched.
			if err := d.Ports().ConfigRule.Check(d.Update().DesiredName); err != nil {
				return Outcome{}, err
			}
			// Nor is a config the pool's MachineConfigs do not render to
			// applied: only its provenance is checked here, its content
			// below.
			mc, err := d.Ports().Configs.MachineConfig(ctx, d.Update().DesiredName)
			if err != nil {
				return Outcome{}, fmt.Errorf("fetching MachineConfig %q: %w", d.Update().DesiredName, err)
			}
			if err := verifyDesired(ctx, d, mc); err != nil {
				return Outcome{}, err
			}
			if err := Plan(ctx, d, nil); err != nil {
				return Outcome{}, err
			}
			u := d.Update()
			d.Progress().Prepare.OS = &progress.OSPlan{FromKernelArgs: u.Current.KernelArguments, ImageChanged: u.Diff.OSImageChanged,
				KernelArgsRemoved: u.Diff.KernelArgsRemoved, KernelArgsAdded: u.Diff.KernelArgsAdded,
				ExtensionsChanged: u.Diff.ExtensionsChanged, KernelTypeChanged: u.Diff.KernelTypeChanged}
			d.Progress().Prepare.Action = saveAction(u.Action)
			return Outcome{Message: plan.Summary(u.Diff, u.Action), Settles: Settles{Desired: u.DesiredName}}, nil
		},
		Reload: func(ctx context.Context, d Data) (Settles, error) {
			return Settles{}, Plan(ctx, d, d.Progress().Prepare.OS)
		},
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
		diff.ExtensionsChanged, diff.KernelTypeChanged = saved.ExtensionsChanged, saved.KernelTypeChanged
		if d.Ports().OS == nil {
			NotManaged(&diff)
		}
	} else if err := checkOS(ctx, d.Ports().OS, u.CurrentName == "", current, desired, d.Progress().Inherited.EarlierKernelArgs, &diff); err != nil {
		return err
	} else if err := d.Ports().Host.Preflight(current, desired, diff); err != nil {
		return err // the node's side, before the cordon, a write
	}
	u.Current, u.Desired, u.Diff = current, desired, diff
	if saved != nil && d.Progress().Prepare.Action != nil {
		// Restored drains every reboot (records of releases that saved no
		// drain); a single node is never drained, also after a restart, and
		// also when the Node's topology no longer says so: the plan saved
		// the answer.
		kept := d.Progress().Prepare.Action
		u.Action = restoreAction(kept)
		if u.SingleNode || kept.DrainReason == plan.SingleNodeNoDrain {
			u.Action = u.Action.OnSingleNode()
		}
		return nil
	}
	policy, err := d.Ports().PolicyInForce()
	if err != nil {
		return err
	}
	u.Action = policy.ForRuntime(u.Runtime).PostAction(current, desired, diff)
	if why := d.Progress().RebootRequest; why != "" {
		u.Action = plan.RebootOnRequest(rebootRequestText(why))
	}
	if err := addOwed(ctx, d); err != nil { // owed.go
		return err
	}
	if u.SingleNode {
		u.Action = u.Action.OnSingleNode()
	}
	return checkActionUnits(ctx, d.Ports().Units, desired, u.Action)
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

// checkOS refuses OS changes the node cannot make, and plans the OS change
// against the booted deployment: the image is changed when the node does
// not run the desired one (also when the configs agree: an earlier boot
// fell back), the kernel arguments are edited from the booted ones when
// those are not the current config's (no current config, or a fallback),
// and the extensions and kernel type change when the booted deployment's
// packages are not the desired ones. A node with no OS updater manages no
// OS field (see NotManaged).
func checkOS(ctx context.Context, osu OSUpdater, adopting bool, current, desired plan.Config, earlier []string, diff *plan.Diff) error {
	if osu == nil {
		NotManaged(diff)
		return nil
	}
	if desired.OSImageURL == "" && len(desired.KernelArguments)+len(current.KernelArguments)+len(earlier) == 0 &&
		!diff.OSChanged() && !managesPackages(current) && !managesPackages(desired) {
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
	c := NewOSChange(desired, *diff)
	if err := osu.Supports(c); err != nil {
		return &UnsupportedError{Object: desired.Name, Field: unsupportedField(osu, c, *diff),
			Msg: fmt.Sprintf("this node's OS updater %s cannot make the change: %v", osu.Name(), err)}
	}
	return nil
}

// NotManaged empties the OS part of diff on a node with no OS updater (a
// plain distribution): its image, kernel arguments, extensions and kernel
// type are left as they are, as machine-config-daemon leaves them on a
// node that is not CoreOS, and the diff says so (never "applied"). A diff
// that changes none of them is left as it is ("OS image unchanged" is true
// then, as the preview off the node says).
func NotManaged(diff *plan.Diff) {
	if !diff.OSChanged() {
		return
	}
	diff.OSImageChanged, diff.ExtensionsChanged, diff.KernelTypeChanged = false, false, false
	diff.KernelArgsRemoved, diff.KernelArgsAdded = nil, nil
	diff.OSNotManaged = true
}

// NewOSChange is the OS change that stages diff's toward desired.
func NewOSChange(desired plan.Config, diff plan.Diff) OSChange {
	c := OSChange{KernelArgs: desired.KernelArguments, Removed: diff.KernelArgsRemoved, Added: diff.KernelArgsAdded,
		Extensions: desired.Extensions, KernelType: desired.KernelType,
		PackagesChanged: diff.ExtensionsChanged || diff.KernelTypeChanged}
	if diff.OSImageChanged {
		c.Image = desired.OSImageURL
	}
	return c
}

// managesPackages reports whether cfg sets extensions or a kernel type
// other than the default.
func managesPackages(cfg plan.Config) bool {
	return len(cfg.Extensions) > 0 || plan.CanonicalKernelType(cfg.KernelType) != plan.KernelDefault
}

// unsupportedField names the field of c the updater cannot make: each
// part is asked about alone, in field order.
func unsupportedField(osu OSUpdater, c OSChange, diff plan.Diff) string {
	if c.Image != "" && osu.Supports(OSChange{Image: c.Image}) != nil {
		return "spec.osImageURL"
	}
	if len(c.Removed)+len(c.Added) > 0 && osu.Supports(OSChange{Removed: c.Removed, Added: c.Added}) != nil {
		return "spec.kernelArguments"
	}
	if diff.ExtensionsChanged && osu.Supports(OSChange{Extensions: c.Extensions, PackagesChanged: true}) != nil {
		return "spec.extensions"
	}
	return "spec.kernelType"
}

// PlanAgainstBooted corrects diff's OS change with the booted deployment
// b. The image changes exactly when b does not run the desired one, the
// extensions and the kernel type when b's packages are known and are not
// the desired ones. When b
// lacks the current config's kernel arguments, when there is no current
// config (adopting), or when an earlier unfinished update may have left
// its own (earlier: their kernel arguments), the kernel argument edit is
// made from b's: add what the desired config has more of, remove what the
// current config, the diff or the earlier configs name and b has more of
// than desired. Unknown kernel arguments (b.KernelArgs nil) leave the
// config diff.
func PlanAgainstBooted(b BootedOS, adopting bool, current, desired plan.Config, earlier []string, diff *plan.Diff) {
	diff.OSImageChanged = desired.OSImageURL != "" && !b.IsImage
	if b.Packages != nil {
		diff.ExtensionsChanged = !slices.Equal(plan.LayeredExtensions(b.Packages), plan.ExtensionPackages(desired.Extensions))
		diff.KernelTypeChanged = plan.KernelTypeOf(b.Packages, b.RemovedPackages) != plan.CanonicalKernelType(desired.KernelType)
	}
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
