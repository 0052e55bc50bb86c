package plan

import (
	"fmt"
	"strings"
)

// maxSummaryReasons is how many reasons Summary lists before "and N more".
const maxSummaryReasons = 3

// Summary describes a diff and its post action in one line, for the
// UpdateCompatible condition, e.g. "Post action: Reboot; drain required;
// 3 files, 1 unit, SSH keys changed, OS image unchanged; reasons: ...".
func Summary(d Diff, a PostAction) string {
	parts := []string{"Post action: " + actionSummary(a)}
	switch {
	case a.NeedsDrain() && a.Kind != ActionReboot:
		parts = append(parts, "drain required: "+a.DrainReason)
	case a.NeedsDrain():
		parts = append(parts, "drain required")
	case a.DrainReason != "":
		parts = append(parts, "no drain: "+a.DrainReason)
	default:
		parts = append(parts, "no drain")
	}
	if d.Empty() && !d.OSNotManaged {
		parts = append(parts, "no changes")
	} else {
		parts = append(parts, strings.Join(changeCounts(d), ", "))
	}
	if n := len(a.Reasons); n > 0 {
		shown := a.Reasons[:min(n, maxSummaryReasons)]
		reasons := "reasons: " + strings.Join(shown, ", ")
		if n > len(shown) {
			reasons += fmt.Sprintf(" and %d more", n-len(shown))
		}
		parts = append(parts, reasons)
	}
	return strings.Join(parts, "; ")
}

// actionSummary names the action and, below a reboot, the actions in the
// order they run.
func actionSummary(a PostAction) string {
	if a.Kind == ActionReboot || len(a.Actions) == 0 {
		return a.Kind.String()
	}
	return fmt.Sprintf("%s (%s)", a.Kind, DescribeActions(a.Actions))
}

// changeCounts lists the counts of changed things.
func changeCounts(d Diff) []string {
	counts := []string{
		count(len(d.ChangedFiles), len(d.RemovedFiles), "file"),
		count(len(d.ChangedUnits), len(d.RemovedUnits), "unit"),
	}
	if d.SSHKeysChanged() {
		counts = append(counts, "SSH keys changed")
	}
	if d.PasswordHashChanged {
		counts = append(counts, "password hash changed")
	}
	if d.OSNotManaged {
		return append(counts, "OS not managed (no rpm-ostree or bootc on this node)")
	}
	if d.OSImageChanged {
		counts = append(counts, "OS image changed")
	} else {
		counts = append(counts, "OS image unchanged")
	}
	if len(d.KernelArgsAdded) > 0 || len(d.KernelArgsRemoved) > 0 {
		counts = append(counts, fmt.Sprintf("kernel arguments +%d -%d", len(d.KernelArgsAdded), len(d.KernelArgsRemoved)))
	}
	if d.ExtensionsChanged {
		counts = append(counts, "extensions changed")
	}
	if d.KernelTypeChanged {
		counts = append(counts, "kernel type changed")
	}
	return counts
}

// count renders "3 files" or "3 files (1 removed)".
func count(changed, removed int, what string) string {
	s := Plural(changed+removed, what)
	if removed > 0 {
		s += fmt.Sprintf(" (%d removed)", removed)
	}
	return s
}
