package phases

import (
	"context"
	"time"

	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// The runner is what the steps see (Data): the update's own parts here,
// the engine's services (status, Events, metrics, the stop) through it.

// Clock returns the runner's time now.
func (r *Runner) Clock() time.Time { return r.Now() }

// Progress returns the update's progress record.
func (r *Runner) Progress() *progress.Record { return r.Record }

// Ports returns what the steps act on.
func (r *Runner) Ports() *Ports { return &r.Env.Ports }

// Report sets the running step's condition message, with also, and
// writes them.
func (r *Runner) Report(ctx context.Context, message string, also ...Condition) error {
	return r.eng.Report(ctx, message, also...)
}

// Event records an Event on the MachineConfigNode (and the Node).
func (r *Runner) Event(onNode, warning bool, reason, message string) {
	if r.Events != nil {
		r.Events.Event(onNode, warning, reason, message)
	}
}

// Warn records a Warning Event on the node and its MachineConfigNode.
func (r *Runner) Warn(reason, message string) { r.Event(true, true, reason, message) }

// Note records a Normal Event on the node and its MachineConfigNode.
func (r *Runner) Note(reason, message string) { r.Event(true, false, reason, message) }

// Waiting tells the Observer which wait (a Hold kind or a Wait* reason)
// holds the update, "" once none does.
func (r *Runner) Waiting(reason string) { r.eng.Waiting(reason) }

// Cuttable marks the part of a step that a shutdown may cut.
func (r *Runner) Cuttable(ctx context.Context) (context.Context, func()) { return r.eng.Cuttable(ctx) }

// RunSub runs list as a sub-list of the running step.
func (r *Runner) RunSub(ctx context.Context, name string, rec engine.Record, list []Item) error {
	return r.eng.RunSub(ctx, name, rec, list)
}
