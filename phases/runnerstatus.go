package phases

import (
	"context"
	"errors"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// How an update's run ends in the status (the engine stages each step's).

// set stages a condition change and reports whether it changed anything.
func (r *Runner) set(t string, s metav1.ConditionStatus, reason, msg string) bool {
	return r.Status.Set(t, s, reason, msg)
}

// Flush writes staged status changes, if any, in one request.
func (r *Runner) Flush(ctx context.Context) error {
	return r.reporting().Send(ctx, NodeReport{})
}

// end ends a run: it writes what the run staged, once, unless the run
// failed (Fail writes that) or the node is going down (the reboot wrote
// its status), and tells the Observer of an update that finished. A failed
// write is not the run's failure: what the run did is done and recorded,
// and what it staged stays staged for the daemon's next report (a stopped
// or cut update's next run, a kept rollback's keep, a finished update's
// idle pass), which writes it. Failing the update for it would write
// Degraded over a node that runs its new config.
func (r *Runner) end(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, ErrRebooting):
		return err
	case err != nil && !errors.Is(err, ErrComplete) && !errors.Is(err, ErrStopped) && !errors.Is(err, ErrRolledBack) && !engine.IsCut(err):
		return err
	}
	if ferr := r.Flush(ctx); ferr != nil {
		r.log().Warn("Cannot write the status as the run ends; the next report writes it", zap.Error(ferr))
	}
	switch {
	case engine.IsCut(err) || errors.Is(err, ErrStopped) || err == nil:
		r.observeEnd(err)
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
