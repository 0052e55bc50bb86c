package status

import (
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// SetIrreconcilableChanges stages status.irreconcilableChanges: set when an
// update is refused as unreconcilable (Runner.Fail), removed (nil) when an
// update starts (Detect), so that it always describes the desired config
// the node refused. It reports whether anything changed.
func (s *Stager) SetIrreconcilableChanges(changes []mcfgv1.IrreconcilableChangeDiff) bool {
	if slices.Equal(s.st.IrreconcilableChanges, changes) {
		return false
	}
	s.st.IrreconcilableChanges = slices.Clone(changes)
	s.dirty = true
	return true
}
