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
// same. markDegraded builds the annotation and the condition in one
// place, for the failed update (Runner.Fail, through ReportDegraded), the
// daemon's own findings (an unreadable progress record, a config drift)
// and the health gate's rollback (keepPrevious).
type Degraded struct {
	// State is StateDegraded or StateUnreconcilable.
	State string
	// Reason is NodeDegraded's reason and the Event's.
	Reason  string
	Message string
}

// maxStateReason caps the state annotation's reason text.
const maxStateReason = 1024

// NodeStateWriter writes the node's state annotations (Cluster has it).
type NodeStateWriter interface {
	SetNodeState(ctx context.Context, currentConfig, state, reason string) error
}

// ReportDegraded reports deg: markDegraded, the Warning Event (on the Node
// too), and the status, with whatever else the caller staged, written in
// one request. A report that cannot be written is logged: the caller goes
// on either way. It says whether the status was written.
func ReportDegraded(ctx context.Context, nodes NodeStateWriter, st *status.Stager, events Recorder, log *zap.Logger,
	deg Degraded) bool {
	if err := markDegraded(ctx, nodes, st, deg); err != nil {
		log.Error("Cannot write the node's state annotation", zap.Error(err))
	}
	if events != nil {
		events.Event(true, true, deg.Reason, deg.Message)
	}
	if err := st.Flush(ctx); err != nil {
		log.Error("Cannot write the failure to the MachineConfigNode", zap.Error(err))
		return false
	}
	return true
}

// markDegraded is what every report of a failure shares: deg's state
// annotation written first (so that once the status shows the failure,
// the compatible view does too), then NodeDegraded=True staged with the
// same text, even when the annotation could not be written (the error
// says so). The Event and the write are the caller's: ReportDegraded's
// Warning Event says deg.Reason; the health gate's rollback says
// RolledBack, and the runner writes its status.
func markDegraded(ctx context.Context, nodes NodeStateWriter, st *status.Stager, deg Degraded) error {
	err := nodes.SetNodeState(ctx, "", deg.State, Truncate(deg.Message, maxStateReason))
	st.Set(status.NodeDegraded, metav1.ConditionTrue, deg.Reason, deg.Message)
	if err != nil {
		return fmt.Errorf("writing the state annotation of the node: %w", err)
	}
	return nil
}
