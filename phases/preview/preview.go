// Package preview turns prepare's decision on two configs (or its refusal)
// into the report `nodeconfd plan` prints: what each file, unit, SSH key
// list and OS field would become, never file contents, the post action
// and the rule behind each change, and whether a drain is needed. It is
// pure: the decision comes from phases.PlanConfigs, the code prepare runs.
package preview

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// NotPreviewed says what prepare checks on the node itself, which a
// preview made away from the node cannot.
const NotPreviewed = "checked by the daemon on the node, not here: owners against the node's passwd and group, " +
	"the node's paths and folders, and the booted OS deployment (an image already booted is not pulled again)"

// Report is the preview of one update.
type Report struct {
	// Current is the config the node runs ("" for none); Desired the one
	// it would run.
	Current string `json:"current"`
	Desired string `json:"desired"`
	// Apply says the update would be applied; else Refusal says why not.
	Apply      bool         `json:"apply"`
	Refusal    *Refusal     `json:"refusal,omitempty"`
	Files      []FileChange `json:"files,omitempty"`
	Units      []UnitChange `json:"units,omitempty"`
	SSHKeys    []SSHKeys    `json:"sshKeys,omitempty"`
	OSImage    *Transition  `json:"osImage,omitempty"`
	KernelArgs *KernelArgs  `json:"kernelArguments,omitempty"`
	PostAction *PostAction  `json:"postAction,omitempty"`
	// DrainRequired says the node would be cordoned and drained first.
	DrainRequired bool `json:"drainRequired"`
	// Summary is the message prepare writes in UpdateCompatible.
	Summary string `json:"summary,omitempty"`
	// NotPreviewed says what prepare checks that the preview did not; ""
	// when the node's side was checked too (plan --root-mount).
	NotPreviewed string `json:"notPreviewed,omitempty"`
	// Drain is what the drain would do on the node now, when one is
	// required (plan --node only: it reads the node's pods and budgets).
	Drain *DrainForecast `json:"drain,omitempty"`
	// ETA is how long the update would take if it started now (eta.go);
	// set by `nodeconfd plan` for an update that applies.
	ETA *ETA `json:"eta,omitempty"`
}

// DrainForecast is what a drain of the node would do if it started now:
// the pods it would evict, the budgets that cover them, the pods it would
// wait on, and what it would leave in place. Refused is set instead when
// the drain would not start at all (pods no controller would recreate:
// the update fails before the cordon).
type DrainForecast struct {
	Evict []ForecastPod `json:"evict"`
	// Blocked counts the pods of Evict a budget at zero would hold.
	Blocked int `json:"blocked"`
	// Skipped counts the DaemonSet and static pods left in place.
	Skipped int    `json:"skipped"`
	Refused string `json:"refused,omitempty"`
	// WaitsBeforeCordon is set when the update would wait uncordoned for
	// the budgets at zero that no surge could lift (the daemon's
	// --drain-forecast-wait), with the status message it would show.
	WaitsBeforeCordon string `json:"waitsBeforeCordon,omitempty"`
}

// ForecastPod is one pod the drain would evict.
type ForecastPod struct {
	// Pod is namespace/name.
	Pod string `json:"pod"`
	// Budgets are the PodDisruptionBudgets that cover it, with what each
	// allows now.
	Budgets []string `json:"budgets,omitempty"`
	// BlockedBy is set when a covering budget allows no disruption: the
	// drain would wait on the pod until it does.
	BlockedBy string `json:"blockedBy,omitempty"`
	// Last marks a pod evicted after all the others (--drain-last-selector).
	Last bool `json:"last,omitempty"`
}

// Refusal is prepare's refusal of the update.
type Refusal struct {
	// Message is the UpdateCompatible and NodeDegraded message prepare
	// writes ("Error: MachineConfig ...").
	Message string `json:"message"`
	// State is the node's state annotation after the refusal
	// (Unreconcilable or Degraded).
	State string `json:"state"`
	// Problems lists every offending field.
	Problems []Problem `json:"problems"`
}

// Problem is one offending field.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// FileChange is one file added, changed or removed.
type FileChange struct {
	Path   string `json:"path"`
	Change string `json:"change"`
	// Field is the file's entry in the desired config ("" when removed).
	Field           string `json:"field,omitempty"`
	ContentsChanged bool   `json:"contentsChanged"`
	// Size and OldSize are the decoded contents' sizes in bytes.
	Size    *int        `json:"size,omitempty"`
	OldSize *int        `json:"oldSize,omitempty"`
	Mode    *Transition `json:"mode,omitempty"`
	Owner   *Transition `json:"owner,omitempty"`
	Decided
}

// Decided is the post action one change needs and the rule that said so.
type Decided struct {
	// Action is the rule's actions, e.g. "Reload crio.service" or
	// "Reboot (no rule matches)".
	Action string `json:"action"`
	// Rule is the path of the file rule that matched ("" for units, SSH
	// keys, or no match).
	Rule string `json:"rule,omitempty"`
	// Source is where the rule comes from: "default", or the policy's
	// field ("spec.nodeDisruptionPolicy.files[0]").
	Source string `json:"source,omitempty"`
}

// UnitChange is one unit added, changed or removed.
type UnitChange struct {
	Name            string         `json:"name"`
	Change          string         `json:"change"`
	Field           string         `json:"field,omitempty"`
	ContentsChanged bool           `json:"contentsChanged"`
	Dropins         []DropinChange `json:"dropins,omitempty"`
	// Enablement is "enabled", "disabled" or "" (left alone).
	Enablement *Transition `json:"enablement,omitempty"`
	Masked     *Transition `json:"masked,omitempty"`
	Decided
}

// DropinChange is one drop-in added, changed or removed.
type DropinChange struct {
	Name   string `json:"name"`
	Change string `json:"change"`
}

// Transition is a value before and after ("" for none).
type Transition struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// SSHKeys counts one user's authorized keys before and after (after 0: the
// user's key file is removed, its original from before the daemon put back).
type SSHKeys struct {
	User   string `json:"user"`
	Before int    `json:"before"`
	After  int    `json:"after"`
	Decided
}

// KernelArgs is the kernel argument edit.
type KernelArgs struct {
	Removed []string `json:"removed,omitempty"`
	Added   []string `json:"added,omitempty"`
}

// PostAction is what happens after the writes.
type PostAction struct {
	Kind string `json:"kind"`
	// Actions run after the writes, in order ("Drain", "Restart
	// foo.service"); none for a reboot.
	Actions []string `json:"actions,omitempty"`
	// DrainReason says why the node is drained ("" for no drain).
	DrainReason string   `json:"drainReason,omitempty"`
	Reasons     []string `json:"reasons,omitempty"`
}

// Change kinds.
const (
	Added   = "added"
	Changed = "changed"
	Removed = "removed"
)

// Build makes the report of the update from current to desired (names)
// given prepare's decision, or its refusal err.
func Build(current, desired string, dec phases.Decision, err error, policy plan.Policy) Report {
	r := Report{Current: current, Desired: desired, NotPreviewed: NotPreviewed}
	if err != nil {
		r.Refusal = refusal(err)
		return r
	}
	r.Apply = true
	d := dec.Diff
	for _, f := range d.ChangedFiles {
		r.Files = append(r.Files, fileChange(dec.Current, f, policy))
	}
	for _, p := range d.RemovedFiles {
		r.Files = append(r.Files, FileChange{Path: p, Change: Removed,
			Decided: decidedFile(policy, p)})
	}
	for _, u := range d.ChangedUnits {
		r.Units = append(r.Units, unitChange(dec.Current, u, policy))
	}
	for _, u := range d.RemovedUnits {
		r.Units = append(r.Units, UnitChange{Name: u.Name, Change: Removed,
			Decided: decidedUnit(policy, u.Name)})
	}
	for _, k := range d.SSHKeys {
		r.SSHKeys = append(r.SSHKeys, SSHKeys{User: k.User, Before: len(dec.Current.SSHKeys[k.User].Keys), After: len(k.Keys),
			Decided: Decided{Action: plan.DescribeActions(policy.SSHKey), Source: policy.SSHKeySource}})
	}
	if d.OSImageChanged {
		r.OSImage = &Transition{From: dec.Current.OSImageURL, To: dec.Desired.OSImageURL}
	}
	if len(d.KernelArgsRemoved)+len(d.KernelArgsAdded) > 0 {
		r.KernelArgs = &KernelArgs{Removed: d.KernelArgsRemoved, Added: d.KernelArgsAdded}
	}
	a := dec.Action
	r.PostAction = &PostAction{Kind: a.Kind.String(), DrainReason: a.DrainReason, Reasons: a.Reasons}
	for _, x := range a.Actions {
		r.PostAction.Actions = append(r.PostAction.Actions, x.String())
	}
	r.DrainRequired = a.NeedsDrain()
	r.Summary = plan.Summary(d, a)
	return r
}

// decidedFile is the rule that decides a change of the file at path.
func decidedFile(policy plan.Policy, path string) Decided {
	r, ok := policy.FileRuleFor(path)
	if !ok {
		return Decided{Action: "Reboot (no rule matches)"}
	}
	return Decided{Action: plan.DescribeActions(r.Actions), Rule: r.Path, Source: r.Source}
}

// decidedUnit is the rule that decides a change of the unit name.
func decidedUnit(policy plan.Policy, name string) Decided {
	r, ok := policy.UnitRuleFor(name)
	if !ok {
		return Decided{Action: "Reboot (no rule matches)"}
	}
	return Decided{Action: plan.DescribeActions(r.Actions), Source: r.Source}
}

func fileChange(current plan.Config, f plan.File, policy plan.Policy) FileChange {
	size := len(f.Contents)
	c := FileChange{Path: f.Path, Change: Added, Field: f.Field, ContentsChanged: true, Size: &size,
		Mode: &Transition{To: mode(f.Mode)}, Owner: &Transition{To: owner(f.User, f.Group)},
		Decided: decidedFile(policy, f.Path)}
	old, ok := current.Files[f.Path]
	if !ok {
		return c
	}
	c.Change = Changed
	oldSize := len(old.Contents)
	c.OldSize = &oldSize
	c.ContentsChanged = string(old.Contents) != string(f.Contents)
	c.Mode, c.Owner = transition(mode(old.Mode), mode(f.Mode)), transition(owner(old.User, old.Group), owner(f.User, f.Group))
	return c
}

// transition is nil when nothing changes.
func transition(from, to string) *Transition {
	if from == to {
		return nil
	}
	return &Transition{From: from, To: to}
}

// mode renders permission bits as the config gives them ("0644").
func mode(m fs.FileMode) string { return fmt.Sprintf("%04o", uint32(m)) }

// owner renders user:group by name, else ID; the zero value is root.
func owner(user, group plan.Owner) string { return ownerName(user) + ":" + ownerName(group) }

func ownerName(o plan.Owner) string {
	switch {
	case o.Name != "":
		return o.Name
	case o.ID != nil:
		return fmt.Sprint(*o.ID)
	}
	return "root"
}

func unitChange(current plan.Config, u plan.Unit, policy plan.Policy) UnitChange {
	c := UnitChange{Name: u.Name, Change: Added, Field: u.Field, ContentsChanged: u.Contents != nil,
		Enablement: transition("", enablement(u.Enabled)), Masked: transition("", masked(u.Mask)),
		Decided: decidedUnit(policy, u.Name)}
	old, ok := current.Units[u.Name]
	if ok {
		c.Change = Changed
		c.ContentsChanged = !sameString(old.Contents, u.Contents)
		c.Enablement = transition(enablement(old.Enabled), enablement(u.Enabled))
		c.Masked = transition(masked(old.Mask), masked(u.Mask))
	}
	for _, n := range slices.Sorted(maps.Keys(u.Dropins)) {
		if was, ok := old.Dropins[n]; !ok {
			c.Dropins = append(c.Dropins, DropinChange{Name: n, Change: Added})
		} else if was != u.Dropins[n] {
			c.Dropins = append(c.Dropins, DropinChange{Name: n, Change: Changed})
		}
	}
	for _, n := range slices.Sorted(maps.Keys(old.Dropins)) {
		if _, ok := u.Dropins[n]; !ok {
			c.Dropins = append(c.Dropins, DropinChange{Name: n, Change: Removed})
		}
	}
	return c
}

func sameString(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// enablement renders a unit's enablement: "" when the config leaves it alone.
func enablement(e *bool) string {
	switch {
	case e == nil:
		return ""
	case *e:
		return "enabled"
	}
	return "disabled"
}

func masked(m bool) string {
	if m {
		return "masked"
	}
	return ""
}

// refusal is prepare's refusal: the message it writes, the node's state
// after it (as the daemon sets it), and every offending field.
func refusal(err error) *Refusal {
	r := &Refusal{Message: "Error: " + err.Error(), State: phases.StateDegraded}
	var ue *plan.UnreconcilableError
	var us *phases.UnsupportedError
	var ce *plan.ConfigError
	var pe *plan.PolicyError
	switch {
	case errors.As(err, &pe):
		r.Problems = []Problem{{Field: pe.Object + " " + pe.Field, Message: pe.Msg}}
	case errors.As(err, &ue):
		r.State = phases.StateUnreconcilable
		for _, f := range ue.Fields {
			r.Problems = append(r.Problems, Problem{Field: f, Message: "changed; cannot be applied in place"})
		}
	case errors.As(err, &us):
		r.State = phases.StateUnreconcilable
		r.Problems = []Problem{{Field: us.Field, Message: us.Msg}}
	case errors.As(err, &ce):
		for _, p := range append([]*plan.ConfigError{ce}, ce.Others...) {
			r.Problems = append(r.Problems, Problem{Field: p.Field, Message: p.Msg})
		}
	default:
		r.Problems = []Problem{{Message: err.Error()}}
	}
	return r
}
