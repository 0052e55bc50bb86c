package status

import "time"

// ETA is status.updateETA, nodeconfd's own field of the MachineConfigNode
// status (docs/status.md, "ETA"): when the node's update began and when
// the daemon predicts it ends, or ended.
type ETA struct {
	// PostAction is the kind of update predicted for: Reboot, Reload or
	// None.
	PostAction string
	// Started is when the update began (its detect step).
	Started time.Time
	// EstimatedFinish is the predicted end while the update runs; zero
	// once it ended (or failed: a retry predicts again).
	EstimatedFinish time.Time
	// Finished is when the update ended; zero while it runs.
	Finished time.Time
	// BasedOn is how many of the node's past updates of the same kind the
	// prediction is drawn from; 0 means the defaults.
	BasedOn int
}

// SetETA stages status.updateETA for the next write. Like SetGeneration
// it stages no write by itself: the ETA goes out with the status writes
// the update makes anyway, so it costs no request. nil leaves the field
// as the API server has it.
func (s *Stager) SetETA(e *ETA) {
	if e == nil {
		s.st.ETA = nil
		return
	}
	cp := *e
	s.st.ETA = &cp
}

// ETA returns a copy of the staged ETA, or nil.
func (s *Stager) ETA() *ETA {
	if s.st.ETA == nil {
		return nil
	}
	cp := *s.st.ETA
	return &cp
}
