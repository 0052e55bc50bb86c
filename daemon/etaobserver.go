package daemon

import (
	"errors"
	"io/fs"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/daemon/eta"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// etaObserver is an observer of the update's runner that keeps the
// update's ETA (status.updateETA) staged in the node's status stager, so
// that it goes out with the status writes the update makes anyway, and
// the node's history of phase durations on disk (package eta). It tells
// next everything first.
type etaObserver struct {
	next   phases.Observer
	rec    *progress.Record
	stager *status.Stager
	host   phases.Host
	now    func() time.Time
	log    *zap.Logger
	names  []string
	hist   *eta.History
}

// observeETA wraps next (nil for none) with the ETA of rec's update.
func (d *Daemon) observeETA(next phases.Observer, rec *progress.Record, list []phases.Item) phases.Observer {
	if next == nil {
		next = nopObserver{}
	}
	if d.status == nil || d.Env.Host == nil {
		return next
	}
	var names []string
	for _, p := range engine.Steps(list) {
		names = append(names, p.Name)
	}
	return &etaObserver{next: next, rec: rec, stager: d.status, host: d.Env.Host, now: d.Now, log: d.Log, names: names}
}

func (o *etaObserver) PhaseStarted(phase string) {
	o.next.PhaseStarted(phase)
	h := o.history()
	if h.Run == nil || h.Run.Desired != o.rec.Desired {
		whole := phase == progress.StepGiveBack || phase == progress.StepAdopt || phase == progress.StepDetect
		h.Run = &eta.Run{Desired: o.rec.Desired, Started: o.now(), Phases: map[string]float64{}, Whole: whole}
	}
	if phase == progress.StepReboot {
		o.save() // the run is measured on across the boot
	}
	if phase != progress.StepAdopt { // an adoption that completes is no update: nothing to show
		o.stage("")
	}
}

func (o *etaObserver) PhaseDone(phase string, took time.Duration) {
	o.next.PhaseDone(phase, took)
	h := o.history()
	if h.Run == nil {
		return
	}
	if h.Run.Phases == nil {
		h.Run.Phases = map[string]float64{}
	}
	h.Run.Phases[phase] += took.Seconds()
	switch phase {
	case progress.StepAdopt:
	case progress.StepResume: // the list's last step
		o.finish(h)
	default:
		o.stage(phase)
	}
}

// finish stages the end of the update and keeps it as a sample of its
// kind when it was measured from its first step.
func (o *etaObserver) finish(h *eta.History) {
	kind := eta.KindOf(o.rec.Prepare.Action)
	o.stager.SetETA(&status.ETA{PostAction: kind, Started: h.Run.Started, Finished: o.now()})
	if h.Run.Whole && kind != "" {
		h.Add(kind, eta.Sample{Phases: h.Run.Phases})
	}
	h.Run = nil
	o.save()
}

// UpdateFinished takes the estimate back from a run that did not succeed
// (a retry predicts again; the status never promises a finish no step is
// working towards).
func (o *etaObserver) UpdateFinished(result string) {
	o.next.UpdateFinished(result)
	if result == phases.ResultSucceeded {
		return
	}
	if e := o.stager.ETA(); e != nil && !e.EstimatedFinish.IsZero() {
		e.EstimatedFinish, e.BasedOn = time.Time{}, 0
		o.stager.SetETA(e)
	}
}

// Waiting moves the estimate on while the update waits: it then says when
// the update would end if the wait ended now.
func (o *etaObserver) Waiting(reason string) {
	o.next.Waiting(reason)
	if reason != "" && o.history().Run != nil {
		o.stage("")
	}
}

// stage stages the ETA of the phases left, ended being one that just ended.
func (o *etaObserver) stage(ended string) {
	h := o.history()
	left := eta.Left(o.names, o.rec.Done, ended)
	e := eta.Predict(*h, *h.Run, eta.KindOf(o.rec.Prepare.Action), left, o.now())
	o.stager.SetETA(&e)
}

// history is the node's history, read at first use; an unreadable one is
// logged and started afresh.
func (o *etaObserver) history() *eta.History {
	if o.hist != nil {
		return o.hist
	}
	h := eta.History{Version: eta.Version}
	data, err := o.host.ReadState(eta.FileName)
	if err == nil {
		h, err = eta.Decode(data)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		o.log.Warn("Cannot read the history of update durations; predicting from the defaults", zap.Error(err))
	}
	o.hist = &h
	return o.hist
}

func (o *etaObserver) save() {
	if err := o.host.WriteState(eta.FileName, o.history().Encode()); err != nil {
		o.log.Warn("Cannot save the history of update durations", zap.Error(err))
	}
}

// nopObserver is the observer of a daemon without metrics.
type nopObserver struct{}

func (nopObserver) PhaseStarted(string)             {}
func (nopObserver) PhaseDone(string, time.Duration) {}
func (nopObserver) UpdateFinished(string)           {}
func (nopObserver) Waiting(string)                  {}
