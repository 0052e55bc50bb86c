package progress

import "testing"

// The saved step names are a format: renaming one would make a new daemon
// redo (or skip) a step an older daemon had recorded. Change this table
// only together with Version and a migration.
func TestStepNamesAreStable(t *testing.T) {
	for got, want := range map[string]string{
		StepAdopt: "adopt", StepGiveBack: "give-back", StepDetect: "detect", StepPrepare: "prepare",
		StepCordon: "cordon", StepDrain: "drain", StepGate: "gate", StepWrite: "write", StepReboot: "reboot",
		StepReloadCRIO: "reload-crio", StepPostAction: "post-action", StepValidate: "validate",
		StepUncordon: "uncordon", StepSetCurrent: "finish", StepResume: "resume",
		StepFailedElsewhere: "failed-elsewhere", StepHealth: "health",
	} {
		if got != want {
			t.Errorf("step saved as %q, records name it %q", got, want)
		}
	}
	// The rollback's steps (Health's own list).
	for _, c := range [][2]string{{RollbackWrite, "write"}, {RollbackOS, "os"}, {RollbackPost, "post"}, {RollbackCheck, "check"}} {
		if c[0] != c[1] {
			t.Errorf("rollback step saved as %q, records name it %q", c[0], c[1])
		}
	}
}
