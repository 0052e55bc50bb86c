package phases

// The runner's side of the waits (waits.go): what phases see through Data.

// Waits returns what may hold the update, nil for none.
func (r *Runner) Waits() Waits { return r.Env.Waits }

// Waiting is the call site of the metrics hook for waits: it tells
// Env.OnWaiting which wait (a Hold kind: HoldPaused, HoldWindow,
// HoldBlockingPods) holds the update, "" once none does. It maps onto a
// phases.Observer's Waiting(reason string).
func (r *Runner) Waiting(reason string) {
	if r.Env.OnWaiting != nil {
		r.Env.OnWaiting(reason)
	}
}

// Note records a Normal Event on the node and its MachineConfigNode.
func (r *Runner) Note(reason, message string) {
	if r.Events != nil {
		r.Events.Event(true, false, reason, message)
	}
}
