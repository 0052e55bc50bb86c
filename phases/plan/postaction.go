package plan

import (
	"fmt"
	"slices"
	"strings"
)

// PostAction chooses what must happen after the diff is written, as the
// upstream daemon's calculatePostConfigChangeNodeDisruptionAction does: an
// OS image, kernel argument, extension or kernel type change reboots; else
// each changed file, unit and the SSH keys add their rule's actions in that
// order; a file or unit with no rule, or any Reboot, means one reboot; None
// beside other actions is dropped. An identical action already listed is
// not listed again (upstream runs it twice, to the same end). The drain is
// upstream's isDrainRequiredForNodeDisruptionActions: for a Reboot or a
// Drain, and for registries.conf's Special action when its change is
// unsafe for running pods. current and desired give registries.conf's old
// and new contents.
func (p Policy) PostAction(current, desired Config, d Diff) PostAction {
	c := chooser{}
	for _, what := range []struct {
		set  bool
		name string
	}{{d.OSImageChanged, "OS image"}, {len(d.KernelArgsRemoved)+len(d.KernelArgsAdded) > 0, "kernel arguments"},
		{d.ExtensionsChanged, "extensions"}, {d.KernelTypeChanged, "kernel type"}} {
		if what.set {
			c.reason(what.name, []Action{{Type: ActReboot}}, "always")
		}
	}
	for _, f := range d.ChangedFiles {
		c.file(p, f.Path, "")
	}
	for _, path := range d.RemovedFiles {
		c.file(p, path, " (removed)")
	}
	for _, u := range d.ChangedUnits {
		c.unit(p, u.Name, "")
	}
	for _, u := range d.RemovedUnits {
		c.unit(p, u.Name, " (removed)")
	}
	// Upstream's sshkey rule decides every change of core's passwd entry:
	// its SSH keys and its password hash; here every user's keys too.
	switch {
	case d.SSHKeysChanged() && d.PasswordHashChanged:
		c.add("SSH keys and password hash", p.SSHKey, p.SSHKeySource)
	case d.SSHKeysChanged():
		c.add("SSH keys", p.SSHKey, p.SSHKeySource)
	case d.PasswordHashChanged:
		c.add("password hash", p.SSHKey, p.SSHKeySource)
	}
	return c.result(current, desired)
}

// chooser collects the actions of single changes.
type chooser struct {
	actions []Action
	reasons []string
	reboot  bool
}

func (c *chooser) file(p Policy, path, note string) {
	r, ok := p.FileRuleFor(path)
	if !ok {
		c.reason(path+note, []Action{{Type: ActReboot}}, "no rule matches")
		return
	}
	c.add(path+note, r.Actions, r.Source+" "+r.Path)
}

func (c *chooser) unit(p Policy, name, note string) {
	r, ok := p.UnitRuleFor(name)
	if !ok {
		c.reason("unit "+name+note, []Action{{Type: ActReboot}}, "no rule matches")
		return
	}
	c.add("unit "+name+note, r.Actions, r.Source)
}

// add records what needs the actions, by the rule named source.
func (c *chooser) add(what string, as []Action, source string) {
	c.reason(what, as, "rule "+source)
	c.actions = append(c.actions, as...)
}

func (c *chooser) reason(what string, as []Action, why string) {
	if slices.ContainsFunc(as, func(a Action) bool { return a.Type == ActReboot }) {
		c.reboot = true
	}
	c.reasons = append(c.reasons, fmt.Sprintf("%s: %s [%s]", what, DescribeActions(as), why))
}

func (c *chooser) result(current, desired Config) PostAction {
	a := PostAction{Reasons: c.reasons}
	if c.reboot {
		return Restored(true, nil, true, "", c.reasons)
	}
	for _, x := range c.actions {
		if x.Type == ActNone || slices.Contains(a.Actions, x) {
			continue
		}
		a.Actions = append(a.Actions, x)
		a.Kind = max(a.Kind, x.kind())
		switch {
		case x.Type == ActDrain && !a.Drain:
			a.Drain, a.DrainReason = true, "the policy asks for a drain"
		case x.Type == ActSpecial && !a.Drain:
			if why := registriesUnsafe(current, desired); why != "" {
				a.Drain, a.DrainReason = true, why
			}
		}
	}
	return a
}

// Restored is the post action with these parts (one kept in the node's
// progress record): a reboot, else the actions in order; the drain and why.
func Restored(reboot bool, actions []Action, drain bool, drainReason string, reasons []string) PostAction {
	a := PostAction{Drain: drain, DrainReason: drainReason, Reasons: reasons}
	if reboot {
		a.Kind, a.Drain, a.DrainReason = ActionReboot, true, "the node reboots"
		return a
	}
	a.Actions = actions
	for _, x := range actions {
		a.Kind = max(a.Kind, x.kind())
	}
	return a
}

// RebootOnRequest is the post action of a reboot someone asked for with
// no config change: a reboot, drained first, why its one reason.
func RebootOnRequest(why string) PostAction {
	return Restored(true, nil, false, "", []string{why})
}

// registriesUnsafe says why changing registries.conf from current's to
// desired's is unsafe for running pods, or "" when it is safe.
func registriesUnsafe(current, desired Config) string {
	old, nw := current.Files[RegistriesConfPath], desired.Files[RegistriesConfPath]
	if (old.Digest != nil && old.Contents == nil) || (nw.Digest != nil && nw.Contents == nil) {
		return RegistriesConfPath + ": its earlier contents are not known, so the change is taken as unsafe"
	}
	why, err := RegistriesChange(old.Contents, nw.Contents)
	if err != nil {
		return fmt.Sprintf("%s: %v, so the change is taken as unsafe", RegistriesConfPath, err)
	}
	if why != "" {
		return RegistriesConfPath + ": " + why
	}
	return ""
}

// kind is the biggest ActionKind an action stands for.
func (a Action) kind() ActionKind {
	switch {
	case a.Type == ActSpecial, a.Unit == CRIOUnit:
		return ActionReloadCRIO
	case a.Type == ActRestart:
		return ActionRestartUnit
	case a.Type == ActReload:
		return ActionReloadUnit
	case a.Type == ActDaemonReload:
		return ActionDaemonReload
	case a.Type == ActReboot:
		return ActionReboot
	}
	return ActionNone
}

// Owing is a with owed, the post action of earlier updates (by: their
// configs) that were written and replaced before it ran, whose files take
// effect only through it: a reboot if either reboots, else a's actions and
// then owed's not listed yet, drained if either drains. The first reason
// says who owes what, so the plan shows why an update reboots that would
// not alone.
func (a PostAction) Owing(owed PostAction, by []string) PostAction {
	what := DescribeActions(owed.Actions)
	switch {
	case owed.Kind == ActionReboot:
		what = string(ActReboot)
	case len(owed.Actions) == 0:
		return a
	}
	// First, so that the summary, which shows the first reasons, says it.
	reasons := append([]string{fmt.Sprintf("%s (written, replaced before its post action ran): %s [owed]",
		strings.Join(by, ", "), what)}, a.Reasons...)
	if a.Kind == ActionReboot || owed.Kind == ActionReboot {
		return Restored(true, nil, true, "", reasons)
	}
	actions := slices.Clone(a.Actions)
	for _, x := range owed.Actions {
		if !slices.Contains(actions, x) {
			actions = append(actions, x)
		}
	}
	drain, why := a.Drain, a.DrainReason
	if !drain && owed.Drain {
		drain, why = true, owed.DrainReason
	}
	return Restored(false, actions, drain, why, reasons)
}
