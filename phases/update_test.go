package phases_test

import (
	"slices"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// The list is the one place a step is declared: its condition belongs to
// its group as the status contract says, names are unique, the groups come
// in the contract's order, and the list commits once, before the write.
func TestListAgreesWithStatusContract(t *testing.T) {
	order := status.Order()
	seen := map[string]bool{}
	lastGroup, commits := -1, 0
	places := engine.Places(phases.All())
	for _, p := range engine.Steps(phases.All()) {
		if seen[p.Name] {
			t.Errorf("step %s listed twice", p.Name)
		}
		seen[p.Name] = true
		at := places[p.Name]
		if at.Commit {
			commits++
			if p.Name != progress.StepWrite {
				t.Errorf("the list commits before %s, not the write", p.Name)
			}
		}
		c := p.Show.Condition
		if c != "" && status.Parent(c) != at.Group {
			t.Errorf("step %s: condition %s belongs to %q in the contract, the list puts it in %q",
				p.Name, c, status.Parent(c), at.Group)
		}
		if c != "" && p.Show.Starting == "" {
			t.Errorf("step %s reports %s but declares no start message", p.Name, c)
		}
		if at.Group == "" {
			if c != "" || lastGroup >= 0 {
				t.Errorf("step %s has no group but comes after the grouped steps or has a condition", p.Name)
			}
			continue
		}
		g := slices.Index(order, at.Group)
		if g < 0 || g < lastGroup {
			t.Errorf("step %s: group %s out of the contract's order", p.Name, at.Group)
		}
		lastGroup = g
	}
	if commits != 1 {
		t.Errorf("the list commits %d times, want 1", commits)
	}
}

// Every step of the update is saved under a name of progress.Steps, the
// names TestStepNamesAreStable holds fixed: a step named by a literal
// could be renamed, and an older daemon's record would then redo or skip
// it.
func TestEveryStepNamed(t *testing.T) {
	for _, p := range engine.Steps(phases.All()) {
		if !slices.Contains(progress.Steps(), p.Name) {
			t.Errorf("step %q is not one of progress.Steps", p.Name)
		}
	}
}
