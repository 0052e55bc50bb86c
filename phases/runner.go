package phases

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
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

// ErrStopped is returned when the runner stopped between two steps because
// the daemon is shutting down; the update resumes at the next start.
var ErrStopped = errors.New("stopped between steps for shutdown")

// ErrSuperseded is returned when a step that can wait without end (a
// slot wait, a blocked drain) gave up because the node's desired config
// changed: the daemon goes on with the new config at once.
var ErrSuperseded = errors.New("stopped: the node's desired config changed")

// Env is what the phases act on; the daemon builds it from real adapters.
type Env struct {
	Configs Configs
	Cluster Cluster
	Host    Host
	Units   Units
	OS      OSUpdater
	Policy  plan.Policy
	Drift   Drift
	// Disruption is the cluster-wide disruption budget; nil for none.
	Disruption Disruption
	// ConfigRule is the desired config names the node accepts; the zero
	// value accepts every name.
	ConfigRule plan.ConfigRule
	// Limits caps the decoded size of the configs parsed; the zero value
	// means the defaults.
	Limits plan.Limits
	// Health is the post-update health gate (health.go); nil for none.
	Health *HealthGate
}

// Runner runs the phases of one update in order. It owns the status: it
// stages condition changes and writes them at phase boundaries (one write
// per boundary), logs one line per decision, saves progress after every
// step, wraps errors with the phase, and records Events.
type Runner struct {
	Env    Env
	Status StatusWriter
	Events Recorder
	Log    *zap.Logger
	Now    func() time.Time
	Phases []Phase
	Record *progress.Record
	// Stopping, when set and true, stops the run before the next step.
	Stopping func() bool
	// Shutdown, when set, is done when the daemon shuts down: it ends a
	// phase's Wait (nothing is done yet) and Run returns ErrStopped.
	Shutdown context.Context
	// Interrupt, when closed, makes a step that may wait without end (a
	// blocked drain) give up with ErrStopped; it is not done and runs again
	// at the next start.
	Interrupt <-chan struct{}
	// DesiredChanged, when closed, makes a phase's Wait or a step that may
	// wait without end give up with ErrSuperseded; it is not done.
	DesiredChanged <-chan struct{}
	// Conditions is the MachineConfigNode's status as last written; the
	// runner updates it in place.
	Conditions []metav1.Condition
	// CurrentVersion and DesiredVersion are status.configVersion.
	CurrentVersion, DesiredVersion string
	// Fault, when set, is the test-only fault-point hook (package
	// daemon/faultpoint), told of each phase's start, end and record.
	Fault func(point string)

	update  Update
	current *Phase
	dirty   bool
	// startPending is set while a phase start (a condition going Unknown)
	// is staged but not yet written.
	startPending bool
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
func (r *Runner) Update() *Update { return &r.update }

// Start prepares the runner for the update from current to desired.
func (r *Runner) Start(node string) {
	r.update = Update{Node: node, CurrentName: r.Record.Current, DesiredName: r.Record.Desired}
}

// set stages a condition change and reports whether it changed anything.
func (r *Runner) set(t string, s metav1.ConditionStatus, reason, msg string) bool {
	c := metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(r.Now().Truncate(time.Second))}
	if status.Set(&r.Conditions, c) {
		r.dirty = true
		return true
	}
	return false
}

// Flush writes staged status changes, if any, in one request.
func (r *Runner) Flush(ctx context.Context) error {
	if !r.dirty {
		return nil
	}
	if err := r.Status.WriteStatus(ctx, r.Conditions, r.CurrentVersion, r.DesiredVersion); err != nil {
		return fmt.Errorf("writing MachineConfigNode status: %w", err)
	}
	r.dirty, r.startPending = false, false
	return nil
}

// Detected stages step 1 of the contract: Updated=False, every other phase
// condition reset.
func (r *Runner) Detected() {
	now := metav1.NewTime(r.Now().Truncate(time.Second))
	if status.ResetForUpdate(&r.Conditions, now) {
		r.dirty = true
	}
	from := r.update.CurrentName
	if from == "" {
		from = "no config"
	}
	r.set(status.Updated, metav1.ConditionFalse, status.Updated,
		fmt.Sprintf("Node needs update from %s to %s", from, r.update.DesiredName))
}

// Replay re-stages the conditions of the steps the progress record says are
// done, so a restarted daemon shows the same status it had written.
func (r *Runner) Replay() {
	for i := range r.Phases {
		p := &r.Phases[i]
		st := r.Record.Step(p.Name)
		if st == nil {
			continue
		}
		r.finish(p, st)
	}
}

// Reload restores the in-memory state of the done phases after a restart.
func (r *Runner) Reload(ctx context.Context) error {
	for i := range r.Phases {
		p := &r.Phases[i]
		if p.Reload == nil || !r.Record.Done(p.Name) {
			continue
		}
		if err := p.Reload(ctx, r); err != nil {
			return &StepError{Phase: p.Name, Condition: r.cond(p), Err: err}
		}
	}
	return nil
}

// Run runs every phase not yet done. It returns ErrRebooting when the node
// is going down for the post-action reboot, or a *StepError.
func (r *Runner) Run(ctx context.Context) error {
	for i := range r.Phases {
		p := &r.Phases[i]
		if r.Record.Done(p.Name) {
			continue
		}
		if r.Stopping != nil && r.Stopping() {
			if err := r.Flush(ctx); err != nil {
				return err
			}
			return ErrStopped
		}
		if err := r.runPhase(ctx, p); err != nil {
			return err
		}
	}
	return r.Flush(ctx)
}

func (r *Runner) log() *zap.Logger {
	return r.Log.With(zap.String("config", r.update.DesiredName))
}

func (r *Runner) runPhase(ctx context.Context, p *Phase) error {
	log := r.log().With(zap.String("phase", p.Name))
	ctx = WithLog(ctx, log)
	needed, why := true, ""
	if p.Needed != nil {
		needed, why = p.Needed(r)
	}
	if needed && p.Wait != nil {
		if err := r.wait(ctx, p, log); err != nil {
			return err
		}
	}
	// A phase's start is written at once when it shows something new (its
	// group or its own condition going Unknown); other staged changes wait
	// for the next write, so one update costs few requests.
	started := false
	if g := status.Find(r.Conditions, p.Group); g == nil || g.Status == metav1.ConditionFalse {
		started = r.set(p.Group, metav1.ConditionUnknown, p.Group, groupStartMessage(p.Group, r.update.DesiredName))
		r.startPending = r.startPending || started
	}
	if !needed {
		log.Info("Phase not required", zap.String("why", why))
		return r.done(ctx, p, progress.Step{Name: p.Name, Skipped: true, Reason: status.ReasonNotRequired, Message: why})
	}
	r.current = p
	defer func() { r.current = nil }()
	if p.Condition != "" {
		started = r.set(p.Condition, metav1.ConditionUnknown, status.Reason(p.Condition), phaseStartMessage(p.Condition)) || started
	}
	if (started || r.startPending) && !p.Quick {
		if err := r.Flush(ctx); err != nil {
			return &StepError{Phase: p.Name, Condition: r.cond(p), Err: err}
		}
	}
	log.Info("Phase started")
	start := r.Now()
	r.fault("start:", p.Name)
	out, err := p.Run(ctx, r)
	r.fault("ran:", p.Name)
	if errors.Is(err, ErrRebooting) {
		log.Info("Node is rebooting; the update goes on after boot")
		return err
	}
	if errors.Is(err, ErrStopped) {
		log.Info("Phase interrupted for shutdown; it runs again at the next start")
		return err
	}
	if errors.Is(err, ErrHeld) {
		log.Info("Update rolled back by the health gate; the node holds its previous config")
		return r.flushHeld(ctx, err)
	}
	if errors.Is(err, ErrSuperseded) {
		log.Info("Phase stopped: the node's desired config changed; the new config takes over")
		r.flushSuperseded(ctx, log)
		return err
	}
	if err != nil {
		return &StepError{Phase: p.Name, Condition: r.cond(p), Err: err}
	}
	took := r.Now().Sub(start).Round(100 * time.Millisecond)
	if out.Took > 0 {
		took = out.Took.Round(100 * time.Millisecond)
	}
	log.Info("Phase done", zap.Duration("took", took), zap.String("result", out.Message))
	if out.Reason == "" {
		out.Reason = status.Reason(r.cond(p))
	}
	if err := r.done(ctx, p, progress.Step{Name: p.Name, Reason: out.Reason, Message: out.Message}); err != nil {
		return err
	}
	r.event(p, out.Message, took)
	return nil
}

// wait runs the phase's Wait before the phase starts. A shutdown ends the
// wait, and the run stops with ErrStopped. A new desired config ends the
// wait of a phase with OnSuperseded (even one that just ended well):
// OnSuperseded undoes what the update holds (its cordon, its slot), and the
// run stops with ErrSuperseded. Nothing of the phase is done.
func (r *Runner) wait(ctx context.Context, p *Phase, log *zap.Logger) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r.Shutdown != nil {
		defer context.AfterFunc(r.Shutdown, cancel)()
	}
	superseded := func() bool { return false }
	if p.OnSuperseded != nil {
		superseded = r.stopOnSuperseded(wctx, cancel)
	}
	r.current, r.waiting = p, true
	err := p.Wait(wctx, r)
	r.current, r.waiting = nil, false
	switch {
	case r.Shutdown != nil && r.Shutdown.Err() != nil:
		log.Info("Stopped while waiting to start the phase")
		if err := r.Flush(ctx); err != nil {
			return err
		}
		return ErrStopped
	case superseded(): // also after a wait that ended well: the phase is not for the new config
		log.Info("Stopped waiting to start the phase: the node's desired config changed")
		r.current = p
		err := p.OnSuperseded(ctx, r)
		r.current = nil
		if err != nil {
			return &StepError{Phase: p.Name, Condition: r.cond(p), Err: err}
		}
		r.flushSuperseded(ctx, log)
		return ErrSuperseded
	case err == nil:
		return nil
	}
	return &StepError{Phase: p.Name, Condition: r.cond(p), Err: err}
}

// event records one Event per finished phase that reports a condition of
// its own, and one for a group whose phases reported none (a post action
// of None, the completion, the resume).
func (r *Runner) event(p *Phase, msg string, took time.Duration) {
	if r.Events == nil {
		return
	}
	if p.Condition == "" {
		if !r.lastOfGroup(p) || r.evented[p.Group] {
			return
		}
	}
	if r.evented == nil {
		r.evented = map[string]bool{}
	}
	r.evented[p.Group] = true
	r.Events.Event(eventOnNode(r.cond(p)), false, r.cond(p), fmt.Sprintf("%s (%s)", msg, took))
}

// done records a finished (or skipped) step on disk, then stages its status.
// The record is saved first: a crash between the two replays the status.
func (r *Runner) done(ctx context.Context, p *Phase, st progress.Step) error {
	r.Record.Finish(st)
	if err := r.SaveProgress(); err != nil {
		return &StepError{Phase: p.Name, Condition: r.cond(p), Err: err}
	}
	r.fault("done:", p.Name)
	r.finish(p, &st)
	return nil
}

// finish stages the conditions of a finished step: its own condition, and
// its group once the group's last phase is done.
func (r *Runner) finish(p *Phase, st *progress.Step) {
	switch {
	case st.Skipped && p.Condition != "":
		r.set(p.Condition, metav1.ConditionFalse, status.ReasonNotRequired, st.Message)
	case p.Condition != "":
		r.set(p.Condition, metav1.ConditionTrue, st.Reason, st.Message)
	}
	if !r.lastOfGroup(p) {
		return
	}
	if p.Condition == "" && !st.Skipped {
		r.set(p.Group, metav1.ConditionTrue, st.Reason, st.Message)
		return
	}
	r.set(p.Group, metav1.ConditionTrue, p.Group, groupDoneMessage(p.Group, r.update.DesiredName))
}

func (r *Runner) lastOfGroup(p *Phase) bool {
	last := ""
	for i := range r.Phases {
		if r.Phases[i].Group == p.Group {
			last = r.Phases[i].Name
		}
	}
	return last == p.Name
}

func (r *Runner) cond(p *Phase) string {
	if p.Condition != "" {
		return p.Condition
	}
	return p.Group
}

// Fail stages and writes the status of a failed update: the failing phase's
// condition Unknown with an Error: message, NodeDegraded=True with the same
// text. compatible=false marks a config that cannot be applied at all.
func (r *Runner) Fail(ctx context.Context, err error) error {
	var se *StepError
	cond := status.UpdatePrepared
	if errors.As(err, &se) {
		cond = se.Condition
	}
	msg := "Error: " + rootMessage(err)
	var ue *plan.UnreconcilableError
	var ce *plan.ConfigError
	var us *UnsupportedError
	if errors.As(err, &ue) || errors.As(err, &ce) || errors.As(err, &us) {
		r.set(status.UpdateCompatible, metav1.ConditionFalse, status.Reason(status.UpdateCompatible), msg)
		r.set(status.UpdatePrepared, metav1.ConditionUnknown, status.UpdatePrepared, msg)
	} else {
		r.set(cond, metav1.ConditionUnknown, status.Reason(cond), msg)
		if parent := groupOf(r.Phases, cond); parent != "" && parent != cond {
			r.set(parent, metav1.ConditionUnknown, parent, msg)
		}
	}
	r.set(status.NodeDegraded, metav1.ConditionTrue, status.ReasonUpdateFailed, msg)
	if r.Events != nil {
		r.Events.Event(true, true, status.ReasonUpdateFailed, msg)
	}
	return r.Flush(ctx)
}

// rootMessage is the error text without the runner's own "phase x:" prefix.
func rootMessage(err error) string {
	var se *StepError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	return err.Error()
}

func groupOf(ps []Phase, cond string) string {
	for _, p := range ps {
		if p.Condition == cond || p.Group == cond {
			return p.Group
		}
	}
	return ""
}

// Data implementation: the runner is what phases see.

// Clock returns the runner's time now.
func (r *Runner) Clock() time.Time { return r.Now() }

// Progress returns the update's progress record.
func (r *Runner) Progress() *progress.Record { return r.Record }

// SetCondition stages a condition other than the running phase's.
func (r *Runner) SetCondition(t string, s metav1.ConditionStatus, reason, msg string) {
	r.set(t, s, reason, msg)
}

// Warn records a Warning Event on the node and its MachineConfigNode.
func (r *Runner) Warn(reason, message string) {
	if r.Events != nil {
		r.Events.Event(true, true, reason, message)
	}
}

// Interrupted is closed when a long step should give up for shutdown.
func (r *Runner) Interrupted() <-chan struct{} { return r.Interrupt }

// Superseded is closed when the node's desired config changed.
func (r *Runner) Superseded() <-chan struct{} { return r.DesiredChanged }

// flushSuperseded writes what a superseded phase staged (the uncordon). A
// failure is only logged: the new config's update writes the status at
// once anyway, and must not be held up by it.
func (r *Runner) flushSuperseded(ctx context.Context, log *zap.Logger) {
	if err := r.Flush(ctx); err != nil {
		log.Warn("Cannot write the status of the superseded update", zap.Error(err))
	}
}

// stopOnSuperseded calls cancel once r.DesiredChanged closes while ctx lives,
// and reports whether it did.
func (r *Runner) stopOnSuperseded(ctx context.Context, cancel context.CancelFunc) func() bool {
	var fired atomic.Bool
	select {
	case <-r.DesiredChanged: // changed already
		fired.Store(true)
		cancel()
		return fired.Load
	default:
	}
	if r.DesiredChanged != nil {
		go func() {
			select {
			case <-r.DesiredChanged:
				fired.Store(true)
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return fired.Load
}

// SaveProgress writes the progress record to the node.
func (r *Runner) SaveProgress() error {
	data, err := r.Record.Marshal()
	if err != nil {
		return err
	}
	if err := r.Env.Host.WriteState(progress.FileName, data); err != nil {
		return fmt.Errorf("saving progress: %w", err)
	}
	return nil
}

// Report sets the running phase's condition message and writes it.
func (r *Runner) Report(ctx context.Context, message string) error {
	if r.current == nil {
		return nil
	}
	c := r.cond(r.current)
	if r.waiting {
		r.set(c, metav1.ConditionFalse, status.ReasonWaiting, message)
	} else {
		r.set(c, metav1.ConditionUnknown, status.Reason(c), message)
	}
	return r.Flush(ctx)
}

// SetDesiredVersion stages status.configVersion.desired.
func (r *Runner) SetDesiredVersion(name string) {
	if r.DesiredVersion != name {
		r.DesiredVersion = name
		r.dirty = true
	}
}

// SetCurrentVersion stages status.configVersion.current.
func (r *Runner) SetCurrentVersion(name string) {
	if r.CurrentVersion != name {
		r.CurrentVersion = name
		r.dirty = true
	}
}

func (r *Runner) Configs() Configs    { return r.Env.Configs }
func (r *Runner) Cluster() Cluster    { return r.Env.Cluster }
func (r *Runner) Host() Host          { return r.Env.Host }
func (r *Runner) Units() Units        { return r.Env.Units }
func (r *Runner) OS() OSUpdater       { return r.Env.OS }
func (r *Runner) Policy() plan.Policy { return r.Env.Policy }
func (r *Runner) Drift() Drift        { return r.Env.Drift }
func (r *Runner) Limits() plan.Limits { return r.Env.Limits }

// ConfigRule returns the desired config names the node accepts.
func (r *Runner) ConfigRule() plan.ConfigRule { return r.Env.ConfigRule }

// Health returns the post-update health gate, nil for none.
func (r *Runner) Health() *HealthGate { return r.Env.Health }

// Disruption returns the disruption budget, nil for none.
func (r *Runner) Disruption() Disruption { return r.Env.Disruption }

func eventOnNode(cond string) bool {
	switch cond {
	case status.Cordoned, status.Drained, status.RebootedNode:
		return true
	}
	return false
}
