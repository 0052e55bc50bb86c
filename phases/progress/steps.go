package progress

// The step names of an update, as saved in the record. They are part of
// the record's format: a daemon resumes an update an older daemon started
// by these names, so a name never changes (TestStepNamesAreStable). The
// Go names say what the step does; the saved names are historical.
const (
	StepAdopt      = "adopt"
	StepGiveBack   = "give-back"
	StepDetect     = "detect"
	StepPrepare    = "prepare"
	StepCordon     = "cordon"
	StepDrain      = "drain"
	StepWrite      = "write"
	StepReboot     = "reboot"
	StepReloadCRIO = "reload-crio"
	StepPostAction = "post-action"
	StepValidate   = "validate"
	StepUncordon   = "uncordon"
	// StepSetCurrent records the node at its new config (annotations,
	// applied copy, configVersion.current).
	StepSetCurrent = "finish"
	StepResume     = "resume"
)
