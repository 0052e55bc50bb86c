package phases

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// unitDirs are where a config's storage files can put a unit file.
func unitDirs() []string {
	return []string{"/etc/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}
}

// checkActionUnits refuses, before anything is touched, a post action that
// reloads or restarts a unit the node does not have and the config does
// not write: systemd would refuse it only after the writes, leaving the
// update failed half-way.
func checkActionUnits(ctx context.Context, units Units, desired plan.Config, a plan.PostAction) error {
	for _, x := range a.Actions {
		if (x.Type != plan.ActReload && x.Type != plan.ActRestart) || writesUnit(desired, x.Unit) {
			continue
		}
		state, err := units.IsEnabled(ctx, x.Unit)
		if err != nil {
			return fmt.Errorf("checking the unit of the post action %s: %w", x, err)
		}
		if state != "not-found" {
			continue
		}
		return &plan.PolicyError{Object: "the node disruption policy", Field: ruleOf(a, x),
			Msg: fmt.Sprintf("the post action %s names a unit this node does not have and the config does not write; "+
				"systemd would refuse it after the writes", x)}
	}
	return nil
}

// writesUnit reports whether the config writes the unit's file.
func writesUnit(c plan.Config, unit string) bool {
	if u, ok := c.Units[unit]; ok && u.Contents != nil {
		return true
	}
	for _, dir := range unitDirs() {
		if _, ok := c.Files[path.Join(dir, unit)]; ok {
			return true
		}
	}
	return false
}

// ruleOf names the change and rule that asked for x (the first reason that
// lists it).
func ruleOf(a plan.PostAction, x plan.Action) string {
	for _, r := range a.Reasons {
		if strings.Contains(r, x.String()) {
			return r
		}
	}
	return x.String()
}
