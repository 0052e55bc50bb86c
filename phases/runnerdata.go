package phases

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
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

// SetDesiredVersion stages status.configVersion.desired.
func (r *Runner) SetDesiredVersion(name string) { r.Status.SetDesiredVersion(name) }

// SetCurrentVersion stages status.configVersion.current.
func (r *Runner) SetCurrentVersion(name string) { r.Status.SetCurrentVersion(name) }

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

func (r *Runner) Configs() Configs { return r.Env.Configs }
func (r *Runner) Cluster() Cluster { return r.Env.Cluster }
func (r *Runner) Host() Host       { return r.Env.Host }
func (r *Runner) Units() Units     { return r.Env.Units }
func (r *Runner) OS() OSUpdater    { return r.Env.OS }
func (r *Runner) Policy() (plan.Policy, error) {
	if r.Env.PolicySource != nil {
		return r.Env.PolicySource()
	}
	return r.Env.Policy, nil
}
func (r *Runner) Drift() Drift        { return r.Env.Drift }
func (r *Runner) Limits() plan.Limits { return r.Env.Limits }

// ConfigRule returns the desired config names the node accepts.
func (r *Runner) ConfigRule() plan.ConfigRule { return r.Env.ConfigRule }

// Health returns the post-update health gate, nil for none.
func (r *Runner) Health() *HealthGate { return r.Env.Health }
