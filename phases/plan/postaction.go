package plan

import (
	"fmt"
	"slices"
)

// PostAction chooses what must happen after the diff is written: the
// biggest action any change needs, the units to reload or restart, and one
// reason per change. An empty diff needs ActionNone.
func (p Policy) PostAction(d Diff) PostAction {
	c := collector{reload: map[string]bool{}, restart: map[string]bool{}}
	for _, f := range d.ChangedFiles {
		c.file(p, f.Path, "")
	}
	for _, path := range d.RemovedFiles {
		c.file(p, path, " (removed)")
	}
	for _, u := range d.ChangedUnits {
		c.add(Rule{Action: ActionReboot}, "unit "+u.Name)
	}
	for _, u := range d.RemovedUnits {
		c.add(Rule{Action: ActionReboot}, "unit "+u.Name+" (removed)")
	}
	if d.SSHKeysChanged {
		c.add(Rule{Action: ActionNone}, "SSH keys")
	}
	if d.OSImageChanged {
		c.add(Rule{Action: ActionReboot}, "OS image")
	}
	if len(d.KernelArgsRemoved) > 0 || len(d.KernelArgsAdded) > 0 {
		c.add(Rule{Action: ActionReboot}, "kernel arguments")
	}
	if d.ExtensionsChanged {
		c.add(Rule{Action: ActionReboot}, "extensions")
	}
	if d.KernelTypeChanged {
		c.add(Rule{Action: ActionReboot}, "kernel type")
	}
	return c.result()
}

// collector accumulates the actions of single changes.
type collector struct {
	a               PostAction
	reload, restart map[string]bool
}

// file adds the action of a changed or removed file.
func (c *collector) file(p Policy, path, note string) {
	r, ok := p.match(path)
	if !ok {
		c.add(Rule{Action: ActionReboot}, path+note, " (no rule matches)")
		return
	}
	c.add(r, path+note)
}

// add records that what needs the rule's action.
func (c *collector) add(r Rule, what string, extra ...string) {
	c.a.Kind = max(c.a.Kind, r.Action)
	var reason string
	switch r.Action {
	case ActionNone:
		reason = "none"
	case ActionDaemonReload:
		reason = "daemon-reload"
		c.a.DaemonReload = true
	case ActionReloadUnit:
		reason = "reload " + r.Unit
		c.reload[r.Unit] = true
	case ActionRestartUnit:
		reason = "restart " + r.Unit
		c.restart[r.Unit] = true
	case ActionReloadCRIO:
		reason = "reload " + CRIOUnit
		c.reload[CRIOUnit] = true
	default:
		reason = "reboot"
	}
	for _, e := range extra {
		reason += e
	}
	c.a.Reasons = append(c.a.Reasons, fmt.Sprintf("%s: %s", what, reason))
}

func (c *collector) result() PostAction {
	a := c.a
	if a.Kind == ActionReboot {
		a.DaemonReload = false
		return a
	}
	for u := range c.restart {
		a.RestartUnits = append(a.RestartUnits, u)
		delete(c.reload, u)
	}
	for u := range c.reload {
		a.ReloadUnits = append(a.ReloadUnits, u)
	}
	slices.Sort(a.RestartUnits)
	slices.Sort(a.ReloadUnits)
	return a
}
