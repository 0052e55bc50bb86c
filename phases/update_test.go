package phases_test

import (
	"slices"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// The list is the one place a phase is declared: its condition belongs to
// its group as the status contract says, names are unique, the groups come
// in the contract's order, and exactly one phase commits the update.
func TestListAgreesWithStatusContract(t *testing.T) {
	order := status.Order()
	seen := map[string]bool{}
	lastGroup, commits := -1, 0
	for _, p := range phases.All() {
		if seen[p.Name] {
			t.Errorf("phase %s listed twice", p.Name)
		}
		seen[p.Name] = true
		if p.Commits {
			commits++
		}
		if p.Condition != "" && status.Parent(p.Condition) != p.Group {
			t.Errorf("phase %s: condition %s belongs to %q in the contract, the phase says %q",
				p.Name, p.Condition, status.Parent(p.Condition), p.Group)
		}
		if p.Condition != "" && p.Starting == "" {
			t.Errorf("phase %s reports %s but declares no start message", p.Name, p.Condition)
		}
		if p.Group == "" {
			if p.Condition != "" || lastGroup >= 0 {
				t.Errorf("phase %s has no group but comes after the grouped phases or has a condition", p.Name)
			}
			continue
		}
		g := slices.Index(order, p.Group)
		if g < 0 || g < lastGroup {
			t.Errorf("phase %s: group %s out of the contract's order", p.Name, p.Group)
		}
		lastGroup = g
	}
	if commits != 1 {
		t.Errorf("%d phases commit the update, want 1", commits)
	}
}

// Every step of the update is saved under a name of progress.Steps, the
// names TestStepNamesAreStable holds fixed: a step named by a literal
// could be renamed, and an older daemon's record would then redo or skip
// it.
func TestEveryStepNamed(t *testing.T) {
	for _, p := range phases.All() {
		if !slices.Contains(progress.Steps(), p.Name) {
			t.Errorf("step %q is not one of progress.Steps", p.Name)
		}
	}
}
