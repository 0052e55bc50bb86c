package eta

import (
	"time"

	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// defaultFor is a phase's duration when the node has no past update of
// the kind: rough figures of a small node (a few pods to drain, a boot of
// about two minutes), replaced by the node's own after its first update
// of that kind. Phases not named take no time worth counting.
func defaultFor(kind, phase string) time.Duration {
	common := map[string]time.Duration{
		progress.StepPrepare: time.Second, progress.StepWrite: time.Second,
		progress.StepValidate: time.Second, progress.StepSetCurrent: time.Second,
	}
	byKind := map[string]map[string]time.Duration{
		KindReboot: {progress.StepCordon: time.Second, progress.StepDrain: time.Minute,
			progress.StepReboot: 2 * time.Minute, progress.StepHealth: 10 * time.Second, progress.StepUncordon: time.Second},
		// One of the two runs: CRI-O's reload (the usual one), or the
		// other units' reloads and restarts.
		KindReload: {progress.StepReloadCRIO: 5 * time.Second},
	}
	if d, ok := byKind[kind][phase]; ok {
		return d
	}
	return common[phase]
}
