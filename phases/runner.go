package phases

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// ErrRebooting is returned once the node has been asked to reboot: the
// update goes on after the boot, in a new daemon process.
var ErrRebooting = errors.New("node is rebooting")

// Ports are what the steps act on (Data.Ports); the daemon builds them
// from real adapters.
type Ports struct {
	Configs Configs
	Cluster Cluster
	Host    Host
	Units   Units
	OS      OSUpdater
	// Policy is the node disruption policy; PolicySource, when set, gives
	// the one in force instead (a cluster's, watched), or why none can be.
	Policy       plan.Policy
	PolicySource func() (plan.Policy, error)
	// Drift restarts the config drift monitor; nil for none.
	Drift Drift
	// ConfigRule is the desired config names the node accepts; the zero
	// value accepts every name.
	ConfigRule plan.ConfigRule
	// Provenance checks that a desired config is its pool's merge
	// (provenance.go); nil for none.
	Provenance Provenance
	// Limits caps the decoded size of the configs parsed; the zero value
	// means the defaults.
	Limits plan.Limits
	// Waits is what may hold an update (pause, windows, blocking pods);
	// nil for none.
	Waits Waits
	// Health is the post-update health gate (health.go); nil for none.
	Health *HealthGate
	// RebootRequests clears the reboot requests a reboot answered
	// (rebootrequest.go); nil for none.
	RebootRequests RebootRequests
	// Volumes holds a reboot until the drained pods' volumes are detached
	// (volumes.go); nil for no wait.
	Volumes *VolumeWait
}

// PolicyInForce is the node disruption policy in force (PolicySource's
// when set, else Policy), or why there is none: prepare then refuses the
// update, naming the policy's field.
func (p *Ports) PolicyInForce() (plan.Policy, error) {
	if p.PolicySource != nil {
		return p.PolicySource()
	}
	return p.Policy, nil
}

// Env is what the runner is given: the steps' ports and its own Observer.
type Env struct {
	Ports
	// Observer is told what the metrics count (see Observer); nil for none.
	// The steps tell it through Data.Waiting, never directly.
	Observer Observer
}

// Runner runs the phases of one update (the list in update.go) in order.
// It stages condition changes in the node's one status stager and flushes
// them at phase boundaries, logs one line per decision, saves progress
// after every step, wraps errors with the phase, and records Events.
type Runner struct {
	Env Env
	// Status is the node's MachineConfigNode status; the runner stages
	// into it and flushes it.
	Status *status.Stager
	Events Recorder
	Log    *zap.Logger
	Now    func() time.Time
	Phases []Phase
	Record *progress.Record
	// Node is the node's name; NodeCurrent its currentConfig annotation
	// (the record's Current differs after a lost record).
	Node, NodeCurrent string
	// SingleNode says the cluster has this node only (Update.SingleNode).
	SingleNode bool
	// Runtime is the node's container runtime (Update.Runtime).
	Runtime plan.Runtime
	// Stop is where the update's stop comes from (a shutdown, a new
	// desired config; a pause comes from Env.Waits). The runner watches
	// them in one Stop (stop.go); the zero value never stops.
	Stop Signals
	// Fault, when set, is the test-only fault-point hook (package
	// daemon/faultpoint), told of each phase's start, end and record.
	Fault func(point string)

	stop    *Stop
	update  *Update
	current *Phase
	// startPending is set while a phase start (a condition going Unknown)
	// is staged but not yet written.
	startPending bool
	// unsaved is set while the record holds skipped steps not yet on disk
	// (done); saved is the record as this run last wrote it.
	unsaved bool
	saved   []byte
	// waiting is set while the current phase's Wait runs.
	waiting bool
	// evented holds the groups an Event was recorded for in this run.
	evented map[string]bool
}

// StepError is an update failure in one phase.
type StepError struct {
	Phase     string
	Condition string
	Err       error
}

func (e *StepError) Error() string { return fmt.Sprintf("phase %s: %v", e.Phase, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// Update returns the update being run.
func (r *Runner) Update() *Update {
	if r.update == nil {
		r.update = &Update{Node: r.Node, NodeCurrent: r.NodeCurrent, CurrentName: r.Record.Current,
			DesiredName: r.Record.Desired, SingleNode: r.SingleNode, Runtime: r.Runtime}
	}
	return r.update
}

// Run runs every phase not yet done. A resumed update (its record has
// done steps) first re-stages the status of those steps and reloads what
// they had produced. It returns nil once the update is complete,
// ErrRebooting when the node is going down for the post-action reboot,
// ErrStopped, ErrSuperseded or ErrPaused (see Stop), ErrRolledBack after the
// health gate's rollback, or a *StepError. It writes the status as each
// step starts (when that shows something new) and once as the run ends
// (end).
func (r *Runner) Run(ctx context.Context) error {
	r.Update()
	var paused func() (Hold, bool)
	if r.Env.Waits != nil {
		paused = r.Env.Waits.Paused
	}
	stop, release := newStop(r.Stop, paused)
	defer release()
	r.stop = stop
	return r.end(ctx, r.runList(ctx))
}

// runList runs the steps not done, after re-staging and reloading the
// done ones of a resumed update. However it ends, the steps it skipped are
// on disk after it.
func (r *Runner) runList(ctx context.Context) (err error) {
	defer func() {
		serr := r.saveSkipped()
		switch {
		case err == nil:
			err = serr
		case serr != nil: // as after a crash: they are decided again
			r.log().Warn("Cannot save the skipped steps", zap.Error(serr))
		}
	}()
	if len(r.Record.Steps) > 0 {
		r.log().Info("Resuming update", zap.Strings("done", doneSteps(r.Record)))
		r.replay()
		if err := r.reload(ctx); err != nil {
			return err
		}
	}
	for i := range r.Phases {
		p := &r.Phases[i]
		if r.Record.Done(p.Name) {
			if p.Commits { // a resumed update past its write runs to its end
				r.stop.Commit()
			}
			continue
		}
		if r.stop.Cause() == ErrStopped {
			return ErrStopped
		}
		if err := r.runPhase(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// saveSkipped saves the skipped steps not yet on disk (done).
func (r *Runner) saveSkipped() error {
	if !r.unsaved {
		return nil
	}
	return r.SaveProgress()
}

func doneSteps(rec *progress.Record) []string {
	var names []string
	for _, s := range rec.Steps {
		names = append(names, s.Name)
	}
	return names
}

// replay re-stages the conditions of the steps the progress record says are
// done, so a restarted daemon shows the same status it had written.
func (r *Runner) replay() {
	for i := range r.Phases {
		p := &r.Phases[i]
		if st := r.Record.Step(p.Name); st != nil {
			r.stageDone(p, st)
		}
	}
}

// reload restores the in-memory state of the done phases after a restart.
func (r *Runner) reload(ctx context.Context) error {
	for i := range r.Phases {
		p := &r.Phases[i]
		if p.Reload == nil || !r.Record.Done(p.Name) {
			continue
		}
		if err := p.Reload(ctx, r); err != nil {
			return r.stepError(p, err)
		}
	}
	return nil
}

func (r *Runner) log() *zap.Logger {
	return r.Log.With(zap.String("config", r.Record.Desired))
}

func (r *Runner) runPhase(ctx context.Context, p *Phase) error {
	log := r.log().With(zap.String("phase", p.Name))
	ctx = WithLog(ctx, log)
	needed, why := true, ""
	if p.Needed != nil {
		needed, why = p.Needed(r)
	}
	if p.Commits {
		r.stop.Commit()
	}
	if needed && p.Wait != nil {
		// A wait may last hours: what was decided before it is saved first.
		if err := r.saveSkipped(); err != nil {
			return r.stepError(p, err)
		}
		if err := r.wait(ctx, p, log); err != nil {
			return err
		}
	}
	if needed && p.Pausable {
		r.stop.Pausable(true)
		defer r.stop.Pausable(false)
	}
	if c := r.stop.Cause(); needed && p.Undo != nil && isCut(c) {
		return r.cut(ctx, p, c, log) // cut between its wait and its start
	}
	started := r.stageGroupStart(p)
	if !needed {
		log.Info("Phase not required", zap.String("why", why))
		return r.done(ctx, p, progress.Step{Name: p.Name, Skipped: true, Reason: status.ReasonNotRequired, Message: why})
	}
	r.current = p
	defer func() { r.current = nil }()
	if p.Condition != "" {
		started = r.set(p.Condition, metav1.ConditionUnknown, status.Reason(p.Condition), p.Starting) || started
	}
	// A phase's start is written at once when it shows something new (its
	// group or its own condition going Unknown); other staged changes wait
	// for the next write, so one update costs few requests.
	if (started || r.startPending) && !p.Quick {
		if err := r.Flush(ctx); err != nil {
			return r.stepError(p, err)
		}
	}
	log.Info("Phase started")
	start := r.Now()
	r.Observer().PhaseStarted(p.Name)
	r.fault("start:", p.Name)
	out, err := p.Run(ctx, r)
	r.fault("ran:", p.Name)
	switch {
	case errors.Is(err, ErrRebooting):
		log.Info("Node is rebooting; the update goes on after boot")
		return err
	case errors.Is(err, ErrStopped):
		log.Info("Phase interrupted for shutdown; it runs again at the next start")
		return err
	case errors.Is(err, ErrRolledBack):
		log.Info("Update rolled back by the health gate; the node keeps its previous config")
		return err
	case isCut(err):
		return r.cut(ctx, p, err, log)
	case err != nil:
		return r.stepError(p, err)
	}
	took := r.Now().Sub(start).Round(100 * time.Millisecond)
	if out.Took > 0 {
		took = out.Took.Round(100 * time.Millisecond)
	}
	log.Info("Phase done", zap.Duration("took", took), zap.String("result", out.Message))
	r.Observer().PhaseDone(p.Name, took)
	if out.Reason == "" {
		out.Reason = status.Reason(r.cond(p))
	}
	if err := r.done(ctx, p, progress.Step{Name: p.Name, Reason: out.Reason, Message: out.Message}); err != nil {
		return err
	}
	r.event(p, out.Message, took)
	if out.WriteNow {
		if err := r.Flush(ctx); err != nil {
			log.Warn("Cannot write the status at the end of the phase", zap.Error(err))
		}
	}
	if out.Complete {
		return r.complete(ctx, p, out)
	}
	return nil
}

// complete ends an update that a phase found complete (an adoption): the
// phases after it are recorded as not required, so that the record says
// the update is over.
func (r *Runner) complete(ctx context.Context, after *Phase, out Outcome) error {
	rest := false
	for i := range r.Phases {
		p := &r.Phases[i]
		if p == after {
			rest = true
			continue
		}
		if rest && !r.Record.Done(p.Name) {
			r.Record.MarkDone(progress.Step{Name: p.Name, Skipped: true, Reason: status.ReasonNotRequired, Message: out.Message})
		}
	}
	if err := r.SaveProgress(); err != nil {
		return r.stepError(after, err)
	}
	return ErrComplete
}

// ErrComplete ends the run early: a phase found the update complete.
var ErrComplete = errors.New("update complete")

// done records a finished (or skipped) step on disk, then stages its status.
// The record is saved first: a crash between the two replays the status. A
// skipped step did nothing, so it is saved with the next save (the next
// step's, a step's own before its first change, before a wait, or as the
// list ends): a crash before that decides it again, as it was decided, from
// the saved plan (TestSingleNodeResumedNoDrain). A save is two fsyncs, which
// a node busy with I/O makes slow; 8 to 10 of a rebootless update's 18 steps
// are skipped.
func (r *Runner) done(ctx context.Context, p *Phase, st progress.Step) error {
	r.Record.MarkDone(st)
	if st.Skipped {
		r.unsaved = true
	} else if err := r.SaveProgress(); err != nil {
		return r.stepError(p, err)
	}
	r.fault("done:", p.Name)
	r.stageDone(p, &st)
	return nil
}

// stepError wraps a phase's failure with the phase and the condition that
// reports it; a failure that names its own step (a rollback) keeps it.
func (r *Runner) stepError(p *Phase, err error) error {
	var se *StepError
	if errors.As(err, &se) {
		return err
	}
	return &StepError{Phase: p.Name, Condition: r.cond(p), Err: err}
}

// SaveProgress writes the progress record to the node, unless this run
// last wrote it as it is (the write step saves itself done before it drops
// its journal; the runner's save of that step would write it again). The
// daemon writes no other copy while the runner runs.
func (r *Runner) SaveProgress() error {
	data, err := r.Record.Marshal()
	if err != nil {
		return err
	}
	if bytes.Equal(data, r.saved) {
		return nil
	}
	if err := r.Env.Host.WriteState(progress.FileName, data); err != nil {
		return fmt.Errorf("saving progress: %w", err)
	}
	r.saved, r.unsaved = data, false
	return nil
}
