package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Record is where a list's done steps are kept (the progress record, or a
// sub-list's part of it).
type Record interface {
	Step(name string) *progress.Step
	MarkDone(s progress.Step)
}

// Observer is told what the metrics count: a step's start and end, and
// what the run waits for (package phases' Observer says the contract).
type Observer interface {
	PhaseStarted(step string)
	PhaseDone(step string, took time.Duration)
	Waiting(reason string)
}

// Recorder records Kubernetes Events about the run.
type Recorder interface {
	Event(onNode, warning bool, reason, message string)
}

// End is an error with which a step ends the run without failing it (a
// reboot: the run goes on after the boot), and the line logged for it.
type End struct {
	Err error
	Log string
}

// Runner runs a list. It stages condition changes in Status and flushes
// them at step boundaries, logs one line per decision, tells the Observer,
// saves the record after every step that did something, wraps errors with
// the step, and records an Event per step that reports a condition.
type Runner[D any] struct {
	// Data is what the steps see.
	Data D
	List []Item[D]
	// Record holds the done steps; Save writes it (and nothing when it is
	// as last written).
	Record Record
	Save   func() error
	// Status is where conditions are staged; Flush writes them.
	Status *status.Stager
	Flush  func(ctx context.Context) error
	// Groups gives a group's messages while it runs and once done.
	Groups   func(condition string) (starting, done string)
	Events   Recorder
	Observer Observer
	// Ends are the errors that end a run without failing it.
	Ends []End
	Log  *zap.Logger
	Now  func() time.Time
	// Stop is where the run's stop comes from; the zero value never stops.
	Stop Signals
	// Fault, when set, is the test-only fault-point hook, told of each
	// step's start, end and record.
	Fault func(point string)

	stop  *Stop
	nodes []node[D]
	// current is the step running (or waiting); waiting is set while its
	// gates run; parent is the step whose sub-list runs.
	current, parent *node[D]
	waiting         bool
	// startPending is set while a step's start is staged but not written.
	startPending bool
	// unsaved is set while the record holds skipped steps not on disk.
	unsaved bool
	evented map[string]bool
}

// StepError is a run's failure in one step.
type StepError struct {
	Phase     string
	Condition string
	Err       error
}

func (e *StepError) Error() string { return fmt.Sprintf("phase %s: %v", e.Phase, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// ErrComplete ends the run early: a step found the run complete.
var ErrComplete = errors.New("update complete")

// Run runs every step not done. A resumed run (its record has done steps)
// first re-stages the status of those steps and reloads what they had
// produced. It returns nil once the list is done, ErrComplete when a step
// ended it early, a cause of Stop (ErrStopped, ErrSuperseded, a
// *PausedError), one of Ends, or a *StepError. Whatever it returns, the
// skipped steps are on disk after it.
func (r *Runner[D]) Run(ctx context.Context, resumed []string) (err error) {
	if r.Stop.Shutdown == nil {
		r.Stop.Shutdown = ctx
	}
	// The steps see the stop alone, never ctx's own end: a step with a Cut
	// through its context, a gate through its wait's, and a step without
	// one runs to its end (a write cut off half-way helps no one).
	ctx = context.WithoutCancel(ctx)
	stop, release := NewStop(r.Stop)
	defer release()
	r.stop, r.nodes = stop, flatten(r.List)
	defer func() {
		serr := r.saveSkipped()
		switch {
		case err == nil:
			err = serr
		case serr != nil: // as after a crash: they are decided again
			r.Log.Warn("Cannot save the skipped steps", zap.Error(serr))
		}
	}()
	if len(resumed) > 0 {
		r.Log.Info("Resuming update", zap.Strings("done", resumed))
		r.replay()
		if err := r.reload(ctx); err != nil {
			return err
		}
	}
	return r.runNodes(ctx, r.nodes)
}

// runNodes runs the steps of nodes not done, in order.
func (r *Runner[D]) runNodes(ctx context.Context, nodes []node[D]) error {
	for i := range nodes {
		n := &nodes[i]
		if n.commit {
			r.stop.Commit()
		}
		if r.Record.Step(n.step.Name) != nil {
			continue
		}
		if r.stop.Cause() == ErrStopped {
			return ErrStopped
		}
		if err := r.runStep(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// replay re-stages the conditions of the done steps, so that a restarted
// daemon shows the status it had written.
func (r *Runner[D]) replay() {
	for i := range r.nodes {
		if st := r.Record.Step(r.nodes[i].step.Name); st != nil {
			r.stageDone(&r.nodes[i], st)
		}
	}
}

// Restage stages the conditions of the record's done steps, as a resumed
// run does before it goes on, and runs nothing: the status of a run that
// ended before it was written (a crash between the record of its last step
// and its last status write).
func (r *Runner[D]) Restage() {
	r.nodes = flatten(r.List)
	r.replay()
}

// reload restores the in-memory products of the done steps.
func (r *Runner[D]) reload(ctx context.Context) error {
	for i := range r.nodes {
		n := &r.nodes[i]
		if n.step.Reload == nil || r.Record.Step(n.step.Name) == nil {
			continue
		}
		settles, err := n.step.Reload(ctx, r.Data)
		if err != nil {
			return r.stepError(n, err)
		}
		r.settle(settles)
	}
	return nil
}

// runStep runs one step: its gates when it is needed, then its Run, and
// records it done, or skipped when not needed.
func (r *Runner[D]) runStep(ctx context.Context, n *node[D]) error {
	s := n.step
	log := r.Log.With(zap.String("phase", n.label()))
	ctx = WithLog(ctx, log)
	needed, why := true, ""
	if s.Needed != nil {
		needed, why = s.Needed(r.Data)
	}
	if needed && len(n.gates) > 0 {
		if err := r.gates(ctx, n, log); err != nil {
			return err
		}
	}
	if needed && s.Cut != nil && s.Cut.Pause {
		r.stop.Pausable(true)
		defer r.stop.Pausable(false)
	}
	if c := r.stop.Cause(); needed && s.Cut != nil && IsCut(c) {
		return r.cut(ctx, n, c, log) // cut between its gates and its start
	}
	started := r.stageGroupStart(n)
	if !needed {
		log.Info("Phase not required", zap.String("why", why))
		return r.done(n, progress.Step{Name: s.Name, Skipped: true, Reason: status.ReasonNotRequired, Message: why})
	}
	if err := r.start(ctx, n, started); err != nil {
		return err
	}
	log.Info("Phase started")
	start := r.Now()
	out, err := r.run(ctx, n)
	r.settle(out.Settles)
	if err != nil {
		return r.failed(ctx, n, err, log)
	}
	return r.finish(ctx, n, out, r.Now().Sub(start), log)
}

// run runs the step's Run, on a context a cut cancels when it has a Cut.
func (r *Runner[D]) run(ctx context.Context, n *node[D]) (Outcome, error) {
	prev := r.current
	r.current = n
	defer func() { r.current = prev }()
	if n.sub == "" {
		r.observer().PhaseStarted(n.label())
	}
	r.fault("start:", n.label())
	defer r.fault("ran:", n.label())
	if n.step.Cut == nil {
		return n.step.Run(ctx, r.Data)
	}
	sctx, release := r.stop.stepContext(ctx)
	defer release()
	out, err := n.step.Run(sctx, r.Data)
	if err != nil && sctx.Err() != nil && ctx.Err() == nil {
		err = context.Cause(sctx) // given up for the stop: its cause
	}
	return out, err
}

// failed ends a step that returned err: an end of the run (a reboot), a
// stop, a cut (undone), or the run's failure.
func (r *Runner[D]) failed(ctx context.Context, n *node[D], err error, log *zap.Logger) error {
	for _, e := range r.Ends {
		if errors.Is(err, e.Err) {
			log.Info(e.Log)
			return err
		}
	}
	switch {
	case errors.Is(err, ErrStopped):
		log.Info("Phase interrupted for shutdown; it runs again at the next start")
		return err
	case IsCut(err):
		return r.cut(ctx, n, err, log)
	}
	return r.stepError(n, err)
}

// finish records a step that ended well and says so.
func (r *Runner[D]) finish(ctx context.Context, n *node[D], out Outcome, took time.Duration, log *zap.Logger) error {
	s := n.step
	if out.Took > 0 {
		took = out.Took
	}
	took = took.Round(100 * time.Millisecond)
	log.Info("Phase done", zap.Duration("took", took), zap.String("result", out.Message))
	if n.sub == "" {
		r.observer().PhaseDone(n.label(), took)
	}
	if out.Reason == "" {
		out.Reason = status.Reason(r.cond(n))
	}
	if err := r.done(n, progress.Step{Name: s.Name, Reason: out.Reason, Message: out.Message}); err != nil {
		return err
	}
	r.event(n, out.Message, took)
	if out.WriteNow {
		if err := r.flush(ctx); err != nil {
			log.Warn("Cannot write the status at the end of the phase", zap.Error(err))
		}
	}
	if out.Complete {
		return r.complete(n, out)
	}
	return nil
}

// complete ends a run that a step found complete: the steps after it are
// recorded as not required, so that the record says the run is over.
func (r *Runner[D]) complete(after *node[D], out Outcome) error {
	rest := false
	for i := range r.nodes {
		n := &r.nodes[i]
		if n == after {
			rest = true
			continue
		}
		if rest && r.Record.Step(n.step.Name) == nil {
			r.Record.MarkDone(progress.Step{Name: n.step.Name, Skipped: true, Reason: status.ReasonNotRequired,
				Message: out.Message})
		}
	}
	if err := r.SaveRecord(); err != nil {
		return r.stepError(after, err)
	}
	return ErrComplete
}

// done records a finished (or skipped) step, then stages its status. The
// record is saved first: a crash between the two replays the status. A
// skipped step did nothing, so it is saved with the next save (the next
// step's, before a gate, or as the run ends): a crash before that decides
// it again, as it was decided. A save is two fsyncs, which a node busy
// with I/O makes slow.
func (r *Runner[D]) done(n *node[D], st progress.Step) error {
	r.Record.MarkDone(st)
	if st.Skipped {
		r.unsaved = true
	} else if err := r.SaveRecord(); err != nil {
		return r.stepError(n, err)
	}
	r.fault("done:", n.label())
	r.stageDone(n, &st)
	return nil
}

// SaveRecord writes the record now.
func (r *Runner[D]) SaveRecord() error {
	if err := r.Save(); err != nil {
		return err
	}
	r.unsaved = false
	return nil
}

func (r *Runner[D]) saveSkipped() error {
	if !r.unsaved {
		return nil
	}
	return r.SaveRecord()
}

// stepError wraps a step's failure with the step and the condition that
// reports it; a failure that names its own step keeps it, and a sub-list's
// is returned as its step gave it, to the step that ran the sub-list.
func (r *Runner[D]) stepError(n *node[D], err error) error {
	var se *StepError
	if r.parent != nil || errors.As(err, &se) { // a sub-list's: its step wraps it
		return err
	}
	return &StepError{Phase: n.step.Name, Condition: r.cond(n), Err: err}
}

func (r *Runner[D]) fault(point, step string) {
	if r.Fault != nil {
		r.Fault(point + step)
	}
}

type nopObserver struct{}

func (nopObserver) PhaseStarted(string)             {}
func (nopObserver) PhaseDone(string, time.Duration) {}
func (nopObserver) Waiting(string)                  {}

func (r *Runner[D]) observer() Observer {
	if r.Observer == nil {
		return nopObserver{}
	}
	return r.Observer
}
