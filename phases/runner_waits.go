package phases

// The runner's side of the waits (waits.go): what phases see through Data.

// Waiting tells the Observer which wait (a Hold kind: HoldPaused,
// HoldWindow, HoldBlockingPods, or a Wait* reason) holds the update, ""
// once none does (see Observer).
func (r *Runner) Waiting(reason string) { r.Observer().Waiting(reason) }

// Note records a Normal Event on the node and its MachineConfigNode.
func (r *Runner) Note(reason, message string) {
	if r.Events != nil {
		r.Events.Event(true, false, reason, message)
	}
}
