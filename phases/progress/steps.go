package progress

// The step names of an update, as saved in the record. They are part of
// the record's format: a daemon resumes an update an older daemon started
// by these names, so a name never changes (TestStepNamesAreStable). The
// Go names say what the step does; the saved names are historical.
const (
	StepAdopt    = "adopt"
	StepGiveBack = "give-back"
	StepDetect   = "detect"
	StepPrepare  = "prepare"
	// StepFailedElsewhere waits while another node reports the desired
	// config failed its health gate.
	StepFailedElsewhere = "failed-elsewhere"
	StepCordon          = "cordon"
	StepDrain           = "drain"
	StepGate            = "gate"
	StepWrite           = "write"
	StepReboot          = "reboot"
	StepReloadCRIO      = "reload-crio"
	StepPostAction      = "post-action"
	StepValidate        = "validate"
	// StepHealth is the health gate (and its rollback, whose own steps
	// are saved in Health.Steps by the Rollback* names).
	StepHealth   = "health"
	StepUncordon = "uncordon"
	// StepSetCurrent records the node at its new config (annotations,
	// applied copy, configVersion.current).
	StepSetCurrent = "finish"
	StepResume     = "resume"
	// StepClearRebootRequest answers a reboot on request (its
	// annotation, its sentinel file).
	StepClearRebootRequest = "clear-reboot-request"
)

// The health gate's rollback steps, as saved in Health's steps.
const (
	RollbackWrite = "write"
	RollbackOS    = "os"
	RollbackPost  = "post"
	RollbackCheck = "check"
)

// Steps are every saved name of the update's steps, in no order: each
// step of phases.All is one of them (TestEveryStepNamed).
func Steps() []string {
	return []string{StepAdopt, StepGiveBack, StepDetect, StepPrepare, StepFailedElsewhere, StepCordon, StepDrain,
		StepGate, StepWrite, StepReboot, StepReloadCRIO, StepPostAction, StepValidate, StepHealth, StepUncordon,
		StepSetCurrent, StepResume, StepClearRebootRequest}
}
