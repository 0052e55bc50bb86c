package eta

import (
	"time"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Left returns the phases of names (the update's list, in order) still to
// run: those not done, but for running's own done (a phase that just
// ended, not yet in the record).
func Left(names []string, done func(string) bool, ended string) []string {
	var out []string
	for _, n := range names {
		if n != ended && !done(n) {
			out = append(out, n)
		}
	}
	return out
}

// Predict returns the status.updateETA of the run under way at now: its
// finish predicted from the phases left, or, before prepare chose the
// post action (kind ""), its start alone.
func Predict(h History, run Run, kind string, left []string, now time.Time) status.ETA {
	e := status.ETA{PostAction: kind, Started: run.Started}
	if kind == "" {
		return e
	}
	d, n := h.Remaining(kind, left)
	e.EstimatedFinish, e.BasedOn = now.Add(d), n
	return e
}
