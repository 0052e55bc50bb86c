package daemon

import "github.com/nodeconfd/nodeconfd/phases/progress"

// The loop's decision, once per pass, of what to do with its node. It is
// pure and table-tested (pass_test.go); reconcile gathers what it needs
// (the MachineConfigNode registered, the record read, leftovers cleaned)
// and carries it out. Everything from an update's start to its end is the
// update list's (phases.List); what is decided here is whether one runs
// now, from and to which config: the node idles, waits paused, keeps the
// config the health gate went back to, or updates.

// passKind is what a pass does.
type passKind int

const (
	// passUpdate runs the update list (also one under way, a health
	// gate's rollback finished first, a retry of a failed config).
	passUpdate passKind = iota
	// passIdle: the node runs its desired config and no update is left
	// half done; a granted reboot request still runs the update list.
	passIdle
	// passPaused: a paused node whose update has not started stays idle
	// on the config it runs (pause.go).
	passPaused
	// passKept: the health gate went back to the previous config, and
	// the desired config is still the failed one (health.go).
	passKept
	// passRetry: as passKept, but the administrator's retry annotation
	// has a new value: a new record tries the failed config again.
	passRetry
)

// passFacts is what a pass knows of its node when it decides.
type passFacts struct {
	current, desired string // the Node's annotations
	// rec is the progress record; nil for none (or one that was
	// unreadable, moved aside).
	rec *progress.Record
	// recordLost: the record was unreadable (NodeDegraded says so).
	recordLost bool
	retry      string // the node's retry annotation (names.RetryFailedConfig)
	paused     bool   // the node is paused, from the watch cache
	// reapply: the administrator asks the node to be brought back to the
	// config it runs (names.Reapply).
	reapply bool
}

// passPlan is a pass's decision.
type passPlan struct {
	kind passKind
	// from and to are the configs of the update to run, or the one it
	// waits to run (passPaused); both the node's config for passIdle and
	// passKept.
	from, to string
	// why names a decision worth its own log line: "" for none.
	why string
}

// The decisions of passUpdate that carryOut logs.
const (
	whyRollbackFirst = "the health gate's rollback finishes before the new desired config"
	whyRecordLost    = "the progress record was lost"
	whyReapply       = "the administrator asks for the config to be applied again"
)

// decidePass decides what a pass does with its node.
func decidePass(f passFacts) passPlan {
	rec, from := f.rec, f.current
	if rec != nil && rec.Health != nil && !rec.Done(progress.StepResume) {
		h := rec.Health
		switch {
		case !h.Kept && h.Failed != "" && rec.Desired != f.desired:
			// The new config starts from the previous one, on an
			// uncordoned node, once the rollback is over.
			return passPlan{kind: passUpdate, from: from, to: rec.Desired, why: whyRollbackFirst}
		case h.Kept && rec.Desired == f.desired && (f.retry == "" || f.retry == h.Retry):
			return passPlan{kind: passKept, from: rec.Current, to: rec.Current}
		case h.Kept && rec.Desired == f.desired:
			return passPlan{kind: passRetry, from: from, to: f.desired}
		}
	}
	notStarted := rec == nil || rec.Done(progress.StepResume)
	switch {
	case rec == nil && f.recordLost:
		// Whether the node is at its currentConfig went with the record:
		// adopted if it is at its desired config in full, else updated.
		_, from = lostRecordPlan(from, f.desired)
		if f.paused && from != "" {
			return passPlan{kind: passPaused, from: from, to: f.desired}
		}
		return passPlan{kind: passUpdate, from: from, to: f.desired, why: whyRecordLost}
	case f.desired == from && notStarted && f.reapply && !f.paused:
		// As after a lost record: from no config, so that every file,
		// unit and key is checked, the node adopted when all match.
		return passPlan{kind: passUpdate, from: "", to: f.desired, why: whyReapply}
	case f.desired == from && notStarted:
		return passPlan{kind: passIdle, from: from, to: from}
	case f.paused && from != "" && notStarted:
		return passPlan{kind: passPaused, from: from, to: f.desired}
	}
	return passPlan{kind: passUpdate, from: from, to: f.desired}
}
