package phases

import (
	"context"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Degraded is a failure as the node reports it: its state annotation
// (Degraded, or Unreconcilable for a change that cannot be applied in
// place), the NodeDegraded condition and a Warning Event, all saying the
// same. ReportDegraded builds the three in one place, for the failed
// update (Runner.Fail) and for the daemon's own findings (an unreadable
// progress record, a config drift).
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

// ReportDegraded reports deg: the state annotation first (so that once the
// status shows the failure, the compatible view does too), then
// NodeDegraded=True staged and the status, with whatever else the caller
// staged, written in one request, then the Warning Event (on the Node
// too). A report that cannot be written is logged: the caller goes on
// either way. It says whether the status was written.
func ReportDegraded(ctx context.Context, nodes NodeStateWriter, st *status.Stager, events Recorder, log *zap.Logger,
	deg Degraded) bool {
	if err := nodes.SetNodeState(ctx, "", deg.State, Truncate(deg.Message, maxStateReason)); err != nil {
		log.Error("Cannot write the node's state annotation", zap.Error(err))
	}
	st.Set(status.NodeDegraded, metav1.ConditionTrue, deg.Reason, deg.Message)
	if events != nil {
		events.Event(true, true, deg.Reason, deg.Message)
	}
	if err := st.Flush(ctx); err != nil {
		log.Error("Cannot write the failure to the MachineConfigNode", zap.Error(err))
		return false
	}
	return true
}
