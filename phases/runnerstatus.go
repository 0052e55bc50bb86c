package phases

import (
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

// How the runner shows an update in the status: the conditions of the
// phases and their groups, derived from the list (update.go).

// set stages a condition change and reports whether it changed anything.
func (r *Runner) set(t string, s metav1.ConditionStatus, reason, msg string) bool {
	return r.Status.Set(t, s, reason, msg)
}

// Flush writes staged status changes, if any, in one request.
func (r *Runner) Flush(ctx context.Context) error {
	if err := r.reporting().Send(ctx, NodeReport{}); err != nil {
		return err
	}
	r.startPending = false
	return nil
}

// stageGroupStart stages the phase's group going Unknown when the group
// has not started yet, and reports whether it did.
func (r *Runner) stageGroupStart(p *Phase) bool {
	if p.Group == "" {
		return false
	}
	g := r.Status.Find(p.Group)
	if g != nil && g.Status != metav1.ConditionFalse {
		return false
	}
	started := r.set(p.Group, metav1.ConditionUnknown, p.Group, groupOf(p.Group).starting(r.Record.Desired))
	r.startPending = r.startPending || started
	return started
}

// stageDone stages the conditions of a finished step: its own condition,
// and its group once the group's last phase is done.
func (r *Runner) stageDone(p *Phase, st *progress.Step) {
	switch {
	case st.Skipped && p.Condition != "":
		r.set(p.Condition, metav1.ConditionFalse, status.ReasonNotRequired, st.Message)
	case p.Condition != "":
		r.set(p.Condition, metav1.ConditionTrue, st.Reason, st.Message)
	}
	if p.Group == "" || !r.lastOfGroup(p) {
		return
	}
	if p.Condition == "" && !st.Skipped {
		r.set(p.Group, metav1.ConditionTrue, st.Reason, st.Message)
		return
	}
	r.set(p.Group, metav1.ConditionTrue, p.Group, groupOf(p.Group).done(r.Record.Desired))
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

// cond is the condition that reports the phase: its own, else its group's,
// else (a phase that reports through others: detect, give-back, adopt)
// UpdatePrepared, where a failure before the update's first phase shows.
func (r *Runner) cond(p *Phase) string {
	switch {
	case p.Condition != "":
		return p.Condition
	case p.Group != "":
		return p.Group
	}
	return status.UpdatePrepared
}

// event records one Event per finished phase that reports a condition of
// its own, and one for a group whose phases reported none (a post action
// of None, the completion, the resume).
func (r *Runner) event(p *Phase, msg string, took time.Duration) {
	if r.Events == nil || p.Group == "" {
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
	r.Events.Event(p.EventOnNode, false, r.cond(p), fmt.Sprintf("%s (%s)", msg, took))
}

// Report sets the running phase's condition message and writes it. A
// failed write is logged here, once: live progress is best effort, so most
// steps go on without it (the next write brings the status up to date);
// the reboot fails on it, not to go down unannounced.
func (r *Runner) Report(ctx context.Context, message string) error {
	if r.current == nil {
		return nil
	}
	c := r.cond(r.current)
	held := ""
	if r.waiting && r.current.Holding != nil {
		held = r.current.Holding(r)
	}
	switch {
	case held != "": // the step's effect is on the node already: never False
		r.set(c, metav1.ConditionTrue, status.ReasonWaiting, held+"; the update waits: "+message)
	case r.waiting:
		r.set(c, metav1.ConditionFalse, status.ReasonWaiting, message)
	default:
		r.set(c, metav1.ConditionUnknown, status.Reason(c), message)
	}
	err := r.Flush(ctx)
	if err != nil {
		r.log().Warn("Cannot write the step's progress", zap.String("phase", r.current.Name), zap.Error(err))
	}
	return err
}

// end ends a run: it writes what the run staged, once, unless the run
// failed (Fail writes that) or the node is going down (the reboot wrote
// its status), and tells the Observer of an update that finished. A
// stopped or cut update's write may fail without holding up what comes
// next (the next run writes the status at once); a rolled-back one's is
// retried (keepPrevious's steps are idempotent).
func (r *Runner) end(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, ErrRebooting):
		return err
	case err != nil && !errors.Is(err, ErrComplete) && !errors.Is(err, ErrStopped) && !errors.Is(err, ErrRolledBack) && !isCut(err):
		return err
	}
	ferr := r.Flush(ctx)
	switch {
	case isCut(err) || errors.Is(err, ErrStopped):
		if ferr != nil {
			r.log().Warn("Cannot write the status of the stopped update", zap.Error(ferr))
		}
		r.observeEnd(err)
		return err
	case errors.Is(err, ErrRolledBack) && ferr != nil:
		return &StepError{Phase: progress.StepHealth, Condition: status.HealthChecked, Err: ferr}
	case ferr != nil:
		return ferr
	case err == nil:
		r.observeEnd(nil)
	case errors.Is(err, ErrComplete): // an adoption: no update ran
		return nil
	}
	return err
}

// Fail reports a failed update, the last entry of the list: the node's
// state annotation (Unreconcilable for a change that cannot be applied in
// place, else Degraded) first, so that once the status shows the failure
// the compatible view does too; then the failing phase's condition (and
// its group) Unknown with an Error: message, NodeDegraded=True with the
// same text, and a Warning Event. A config that cannot be applied at all
// sets UpdateCompatible=False.
func (r *Runner) Fail(ctx context.Context, err error) {
	log := r.log()
	state := StateDegraded
	var ue *plan.UnreconcilableError
	var ce *plan.ConfigError
	var us *UnsupportedError
	var pe *plan.PolicyError // the node disruption policy refused: UpdateCompatible says why
	if errors.As(err, &ue) || errors.As(err, &us) {
		state = StateUnreconcilable
	}
	cond := status.UpdatePrepared
	var se *StepError
	if errors.As(err, &se) {
		cond = se.Condition
	}
	msg := "Error: " + rootMessage(err)
	if ue != nil || us != nil || errors.As(err, &ce) || errors.As(err, &pe) {
		r.set(status.UpdateCompatible, metav1.ConditionFalse, status.Reason(status.UpdateCompatible), msg)
		r.set(status.UpdatePrepared, metav1.ConditionUnknown, status.UpdatePrepared, msg)
	} else {
		r.set(cond, metav1.ConditionUnknown, status.Reason(cond), msg)
		if parent := status.Parent(cond); parent != "" {
			r.set(parent, metav1.ConditionUnknown, parent, msg)
		}
	}
	if changes := IrreconcilableChanges(err); changes != nil {
		r.Status.SetIrreconcilableChanges(changes)
	}
	r.Observer().UpdateFinished(failResult(ue != nil || us != nil || ce != nil))
	// The state annotation says the whole error; the conditions and the
	// Event its root (without the runner's "phase x:" prefix).
	ReportDegraded(ctx, r.reporting(), log,
		Degraded{State: state, Reason: status.ReasonUpdateFailed, Message: msg, Annotation: err.Error()})
}

// reporting is where the runner's reports go.
func (r *Runner) reporting() Reporting {
	return Reporting{Nodes: r.Env.Cluster, Status: r.Status, Events: r.Events}
}

// rootMessage is the error text without the runner's own "phase x:" prefix.
func rootMessage(err error) string {
	var se *StepError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	return err.Error()
}

// Truncate cuts s to at most n bytes, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
