package names_test

import (
	"testing"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
)

// TestStatesMatchTheSteps checks the state values the steps write (package
// phases names them too, for its own steps) against the ones the
// controller reads here.
func TestStatesMatchTheSteps(t *testing.T) {
	for _, c := range []struct{ name, ours, steps string }{
		{"StateDone", names.StateDone, phases.StateDone},
		{"StateWorking", names.StateWorking, phases.StateWorking},
		{"StateDegraded", names.StateDegraded, phases.StateDegraded},
		{"StateUnreconcilable", names.StateUnreconcilable, phases.StateUnreconcilable},
	} {
		if c.ours != c.steps {
			t.Errorf("%s: %q here, %q in package phases", c.name, c.ours, c.steps)
		}
	}
}
