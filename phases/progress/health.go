package progress

import "time"

// Health is the record of the post-update health gate of one update: when
// it started, why it failed, and how far the rollback to the config the
// update came from got, so that a daemon restarted at any moment (a
// SIGKILL, the rollback's own reboot) resumes the rollback where it was and
// never repeats a step that is done (a reboot above all).
type Health struct {
	// Retry is the value of the administrator's retry annotation this
	// attempt started with ("" for the first attempt): a node kept on its previous config tries
	// the failed config again once the annotation has another value.
	Retry string `json:"retry,omitempty"`
	// StartedAt is when the gate first started checking; its timeout runs
	// from there, also across a restart.
	StartedAt time.Time `json:"startedAt,omitzero"`
	// Failed says which check failed and why; set, and saved, before the
	// rollback changes anything.
	Failed string `json:"failed,omitempty"`
	// Steps are the rollback's finished steps (write, os, post, check).
	Steps []Step `json:"steps,omitempty"`
	// Reboot is the rollback's own reboot, as the record's is the
	// update's.
	Reboot Rebooted `json:"reboot,omitzero"`
	// Kept is set once the rollback is over: the node runs the config the
	// update came from and keeps it until its desired config changes or
	// an administrator asks for a retry.
	Kept bool `json:"kept,omitempty"`
}

// Done reports whether the rollback step name is done.
func (h *Health) Done(name string) bool { return h.Step(name) != nil }

// Step returns the rollback step name, or nil.
func (h *Health) Step(name string) *Step {
	for i := range h.Steps {
		if h.Steps[i].Name == name {
			return &h.Steps[i]
		}
	}
	return nil
}

// MarkDone records a finished rollback step.
func (h *Health) MarkDone(s Step) {
	if old := h.Step(s.Name); old != nil {
		*old = s
		return
	}
	h.Steps = append(h.Steps, s)
}

// RolledBack reports whether r's update was undone by the health gate's
// rollback: the node then runs r.Current, not r.Desired, even though the
// update's write is done.
func (r *Record) RolledBack() bool {
	return r.Health != nil && r.Health.Kept
}
