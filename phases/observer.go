package phases

import (
	"errors"
	"time"
)

// Observer is told the facts of an update that the daemon's metrics count
// (package daemon/metrics implements it; the phases never see Prometheus).
// Its methods are called from the update's goroutine, must not block and
// must not fail; the zero Env has none, and then nothing is told.
//
// The contract of each call:
//
//   - PhaseStarted(phase) when a needed phase's Run begins (after its Wait),
//     PhaseDone(phase, took) when it ended well, took as the status reports
//     it (a reboot's spans the boot). A phase that failed, was stopped or
//     superseded gets no PhaseDone: UpdateFinished or the process's end
//     closes it. Skipped phases get neither.
//   - UpdateFinished(result) once per update pass that ends the update: one
//     of the Result* values. A pass that stops for a reboot or a shutdown
//     does not finish the update (it resumes in the next process), nor
//     does one a pause stopped (it waits at its cordon).
//   - Waiting(reason) when the update starts waiting for something outside
//     it, and Waiting("") when that wait ends; reason is one of the Wait*
//     values or Hold kinds (a new reason is a CamelCase constant, added to
//     WaitReasons too). Phases say it through Data.Waiting. A node waits
//     for one thing at a time: a new reason replaces the current one. Both
//     calls are idempotent, so a wait may report its reason every time it
//     reports its progress. The Runner calls Waiting("") after every
//     phase's Wait returns, and UpdateFinished ends any wait too, so a
//     Wait need only report its reason; a wait outside a phase's Wait (the
//     gate of the operator controls, the daemon's own) ends it itself.
type Observer interface {
	PhaseStarted(phase string)
	PhaseDone(phase string, took time.Duration)
	UpdateFinished(result string)
	Waiting(reason string)
}

// The results of a finished update (UpdateFinished).
const (
	// ResultSucceeded: the node runs the desired config.
	ResultSucceeded = "succeeded"
	// ResultFailed: a phase failed; the update is retried with backoff.
	ResultFailed = "failed"
	// ResultRefused: the desired config cannot be applied (invalid,
	// unreconcilable or unsupported); refused in prepare, nothing touched.
	ResultRefused = "refused"
	// ResultSuperseded: the node's desired config changed mid-update; the
	// new config's update takes over.
	ResultSuperseded = "superseded"
)

// Results lists every result an update can finish with.
func Results() []string {
	return []string{ResultSucceeded, ResultFailed, ResultRefused, ResultSuperseded}
}

// The reasons an update waits (Waiting), besides the Hold kinds of the
// operator controls (HoldPaused, HoldWindow, HoldBlockingPods, HoldDrainBlocked, HoldAlerts,
// waits.go).
// They are CamelCase, as the Hold kinds, the status reasons and the Event
// reasons are.
const (
	// WaitDrainBlocked: the drain is past its timeout and evictions are
	// still refused (a PodDisruptionBudget, an error).
	WaitDrainBlocked = "DrainBlocked"
	// WaitVolumesDetached: the drain is done and the reboot waits for the
	// drained pods' volumes to be detached (volumes.go).
	WaitVolumesDetached = "VolumesDetached"
	// WaitUpdateSpread: the start of a new update is put off to its
	// point of the cluster's spread (the daemon's --update-spread).
	WaitUpdateSpread = "UpdateSpread"
	// WaitFailedElsewhere: the config failed the health gate on another
	// node, and the update waits before anything is cordoned or written
	// (healthwait.go).
	WaitFailedElsewhere = "ConfigFailedElsewhere"
)

// WaitReasons lists every reason an update can wait for, so that metrics
// show each one (at 0) before the first wait.
func WaitReasons() []string {
	return []string{WaitDrainBlocked, WaitVolumesDetached, WaitUpdateSpread, WaitFailedElsewhere, HoldPaused, HoldWindow, HoldBlockingPods, HoldDrainBlocked, HoldAlerts}
}

// nopObserver is the Observer of an Env without one.
type nopObserver struct{}

func (nopObserver) PhaseStarted(string)             {}
func (nopObserver) PhaseDone(string, time.Duration) {}
func (nopObserver) UpdateFinished(string)           {}
func (nopObserver) Waiting(string)                  {}

// Observer returns the update's Observer; never nil.
func (r *Runner) Observer() Observer {
	if r.Env.Observer == nil {
		return nopObserver{}
	}
	return r.Env.Observer
}

// observeEnd tells the Observer of a run that ended the update without a
// failure (a failure is told by Fail).
func (r *Runner) observeEnd(err error) {
	switch {
	case err == nil:
		r.Observer().UpdateFinished(ResultSucceeded)
	case errors.Is(err, ErrSuperseded):
		r.Observer().UpdateFinished(ResultSuperseded)
	}
}

// failResult is the result of a failed update: refused when the config
// cannot be applied at all (compatible=false in Fail), else failed.
func failResult(refused bool) string {
	if refused {
		return ResultRefused
	}
	return ResultFailed
}
