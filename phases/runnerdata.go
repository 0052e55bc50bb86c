package phases

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// The runner is what the phases see (Data).

// Clock returns the runner's time now.
func (r *Runner) Clock() time.Time { return r.Now() }

// Progress returns the update's progress record.
func (r *Runner) Progress() *progress.Record { return r.Record }

// SetCondition stages a condition other than the running phase's.
func (r *Runner) SetCondition(t string, s metav1.ConditionStatus, reason, msg string) {
	r.set(t, s, reason, msg)
}

// Stager is the node's status, for the phases that stage more than
// conditions (detect's reset, an adoption).
func (r *Runner) Stager() *status.Stager { return r.Status }

// Event records an Event on the MachineConfigNode (and the Node).
func (r *Runner) Event(onNode, warning bool, reason, message string) {
	if r.Events != nil {
		r.Events.Event(onNode, warning, reason, message)
	}
}

// Warn records a Warning Event on the node and its MachineConfigNode.
func (r *Runner) Warn(reason, message string) { r.Event(true, true, reason, message) }

// Interrupt is done when a step that may wait without end should give up.
func (r *Runner) Interrupt() context.Context { return r.stop.Interrupt() }

// Ports returns what the steps act on.
func (r *Runner) Ports() *Ports { return &r.Env.Ports }
