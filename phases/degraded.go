package phases

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Degraded is a failure as the node reports it: its state annotation
// (Degraded, or Unreconcilable for a change that cannot be applied in
// place), the NodeDegraded condition and a Warning Event, all saying the
// same. stageDegraded stages the condition in one place, for the failed
// update (Runner.Fail, through ReportDegraded), the daemon's own findings
// (an unreadable progress record, a config drift) and the health gate's
// rollback (keepPrevious, through markDegraded).
type Degraded struct {
	// State is StateDegraded or StateUnreconcilable.
	State string
	// Reason is NodeDegraded's reason and the Event's.
	Reason  string
	Message string
	// Annotation is the state annotation's reason when it says more than
	// Message (a failed update's whole error); "" for Message.
	Annotation string
}

// maxStateReason caps the state annotation's reason text.
const maxStateReason = 1024

// NodeStateWriter writes the node's state annotations (Cluster has it).
type NodeStateWriter interface {
	SetNodeState(ctx context.Context, currentConfig, state, reason string) error
}

// ReportDegraded reports deg in one NodeReport: the state annotation,
// NodeDegraded=True with whatever else the caller staged, and a Warning
// Event (on the Node too). A report that cannot be written is logged: the
// caller goes on either way (what was staged goes with the next write).
func ReportDegraded(ctx context.Context, to Reporting, log *zap.Logger, deg Degraded) {
	stageDegraded(to.Status, deg)
	err := to.Send(ctx, NodeReport{State: deg.State, StateReason: deg.annotation(),
		Event: Event{OnNode: true, Warning: true, Reason: deg.Reason, Message: deg.Message}})
	if err != nil {
		log.Error("Cannot report the failure", zap.String("reason", deg.Reason), zap.Error(err))
	}
}

// markDegraded is the health gate rollback's report of deg, from inside its
// step (the runner writes the status, and stages NodeDegraded=True with the
// same text from the step's Settles, even when the annotation could not be
// written: the error says so): the state annotation written at once, so
// that once the status shows the failure the compatible view does too.
func markDegraded(ctx context.Context, nodes NodeStateWriter, deg Degraded) error {
	if err := nodes.SetNodeState(ctx, "", deg.State, Truncate(deg.annotation(), maxStateReason)); err != nil {
		return fmt.Errorf("writing the state annotation of the node: %w", err)
	}
	return nil
}

// condition is NodeDegraded=True saying deg.
func (deg Degraded) condition() Condition {
	return condition(status.NodeDegraded, metav1.ConditionTrue, deg.Reason, deg.Message)
}

func stageDegraded(st *status.Stager, deg Degraded) {
	c := deg.condition()
	st.Set(c.Type, c.Status, c.Reason, c.Message)
}

func (deg Degraded) annotation() string {
	if deg.Annotation != "" {
		return deg.Annotation
	}
	return deg.Message
}
