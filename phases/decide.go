package phases

import (
	"context"
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Decide is prepare's decision on the two parsed configs alone: their diff,
// or the refusal of a change no node can make in place (an
// *plan.UnreconcilableError). What this node's OS updater can make is
// checked against the node (CheckOnNode). Prepare (Plan) and the preview
// (PlanConfigs) both call it, so a preview cannot disagree with the update
// on it.
func Decide(current, desired plan.Config) (plan.Diff, error) {
	diff, err := plan.Compare(current, desired)
	if err != nil {
		return diff, err
	}
	// A registries.conf CRI-O would refuse is refused before anything is
	// written; one the node already runs unchanged is left alone.
	if slices.ContainsFunc(diff.ChangedFiles, func(f plan.File) bool { return plan.IsRegistriesFile(f.Path) }) {
		if err := plan.ValidateRegistriesConf(desired); err != nil {
			return diff, err
		}
	}
	return diff, nil
}

// Decision is what prepare decides from the configs alone, before the
// node's side (the booted OS, Host.Preflight) is checked.
type Decision struct {
	Current, Desired plan.Config
	Diff             plan.Diff
	Action           plan.PostAction
}

// PlanConfigs makes prepare's decision on two MachineConfigs without a node,
// in prepare's order: the desired name against rule, the desired config
// parsed, then the current one (nil: the node runs none), Decide, and the
// post action from policy. Its errors are prepare's, word for word. What
// prepare checks on the node itself (owners against its passwd and group,
// its paths, the booted OS deployment) is not decided here.
func PlanConfigs(current, desired *mcfgv1.MachineConfig, policy plan.Policy, rule plan.ConfigRule, limits plan.Limits) (Decision, error) {
	var dec Decision
	if desired == nil {
		return dec, &plan.ConfigError{Msg: "no desired MachineConfig given"}
	}
	if err := rule.Check(desired.Name); err != nil {
		return dec, err
	}
	var err error
	if dec.Desired, err = plan.ParseWithLimits(desired, limits); err != nil {
		return dec, err
	}
	if current != nil {
		if dec.Current, err = plan.ParseWithLimits(current, limits); err != nil {
			return dec, err
		}
	}
	if dec.Diff, err = Decide(dec.Current, dec.Desired); err != nil {
		return dec, err
	}
	dec.Action = policy.PostAction(dec.Current, dec.Desired, dec.Diff)
	return dec, nil
}

// CheckOnNode adds to a decision what prepare checks on the node itself, as
// it does: the OS change planned against the booted deployment (osu nil:
// the node has no OS updater), then Host.Preflight (owners, paths), and the
// post action chosen again from the corrected diff. It only reads.
func CheckOnNode(ctx context.Context, host Host, osu OSUpdater, policy plan.Policy, adopting bool, dec *Decision) error {
	if err := checkOS(ctx, osu, adopting, dec.Current, dec.Desired, nil, &dec.Diff); err != nil {
		return err
	}
	if err := host.Preflight(dec.Current, dec.Desired, dec.Diff); err != nil {
		return err
	}
	dec.Action = policy.PostAction(dec.Current, dec.Desired, dec.Diff)
	return nil
}
