package phases

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// condition is a condition as a step settles it (Settles, Report).
func condition(t string, s metav1.ConditionStatus, reason, msg string) Condition {
	return Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

// NodeReport is one report of the node: what the caller staged in the
// status, with the state annotation and an Event that go with it. Send
// writes it in the order every report keeps.
type NodeReport struct {
	// State, when set, is written to the node's state annotation (Done,
	// Degraded, ...) with StateReason, cut at 1 KiB, as its reason.
	State, StateReason string
	// Event, when its Reason is set, is recorded once the rest is written.
	Event Event
}

// Event is a Kubernetes Event about the node's update (see Recorder).
type Event struct {
	OnNode, Warning bool
	Reason, Message string
}

// Reporting is where the node's reports go: its annotations, its
// MachineConfigNode's status (the one Stager of the node) and its Events.
type Reporting struct {
	Nodes  NodeStateWriter
	Status *status.Stager
	Events Recorder // nil: none
}

// Send writes rep: the state annotation first, so that the upstream-
// compatible view never lags the status it was written with; then the
// staged status in one request; then the Event. No failure holds back what
// comes after it: the status says more than nothing (the caller retries
// what failed), and the Event is the other way an administrator hears of
// the report (what was staged goes with the next write). The errors are
// joined.
func (to Reporting) Send(ctx context.Context, rep NodeReport) error {
	var errs []error
	if rep.State != "" {
		if err := to.Nodes.SetNodeState(ctx, "", rep.State, Truncate(rep.StateReason, maxStateReason)); err != nil {
			errs = append(errs, fmt.Errorf("writing the node's state annotation: %w", err))
		}
	}
	if err := to.Status.Flush(ctx); err != nil {
		errs = append(errs, fmt.Errorf("writing MachineConfigNode status: %w", err))
	}
	if rep.Event.Reason != "" && to.Events != nil {
		e := rep.Event
		to.Events.Event(e.OnNode, e.Warning, e.Reason, e.Message)
	}
	return errors.Join(errs...)
}
