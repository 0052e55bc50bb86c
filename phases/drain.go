package phases

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Drain evicts the node's pods. A drain that gives up at its timeout (the
// fail policy) or cannot go on (pods without a controller that arrived
// after the cordon's check) undoes the cordon, so the node is not left
// cordoned by an update that cannot go on, and the retry starts again from
// the cordon. A drain interrupted for shutdown stops with ErrStopped and
// runs again at the next start. A new desired config (a rollback) or a
// pause stops a drain: the runner undoes the cordon (giveBackForCut), and
// the daemon takes up the new config, or waits for the pause to end.
func Drain() Step {
	return Step{
		Name: progress.StepDrain, Show: Show{Condition: status.Drained, Starting: "Draining node", OnNode: true}, Needed: needsDrain,
		Cut: &Cut{Undo: giveBackForCut, Pause: true},
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			res, err := d.Ports().Cluster.Drain(ctx, drainProgress{ctx: ctx, d: d})
			if err != nil && ctx.Err() != nil {
				return Outcome{}, context.Cause(ctx) // cut: the runner undoes the cordon (Undo)
			}
			if errors.Is(err, ErrDrainTimedOut) || errors.Is(err, ErrCannotDrain) {
				settles, err := giveBackForFailure(ctx, d, err)
				return Outcome{Settles: settles}, err
			}
			if err != nil {
				return Outcome{}, fmt.Errorf("draining node %s: %w", d.Update().Node, err)
			}
			return Outcome{Message: drainedMessage(res)}, nil
		},
	}
}

// drainProgress shows a running drain in the Drained condition, and a drain
// blocked past its timeout in a Warning Event too.
type drainProgress struct {
	ctx context.Context
	d   Data
}

func (p drainProgress) Progress(msg string) { _ = p.d.Report(p.ctx, msg) }

func (p drainProgress) Blocked(msg string) {
	_ = p.d.Report(p.ctx, msg)
	p.d.Warn("DrainBlocked", "Drain of node "+p.d.Update().Node+" is blocked: "+msg)
}

func drainedMessage(res DrainResult) string {
	msg := "Drained node: evicted " + plan.Plural(res.Evicted, "pod")
	if res.Skipped > 0 {
		msg += fmt.Sprintf(", left %s of DaemonSets or static pods in place", plan.Plural(res.Skipped, "pod"))
	}
	if res.Blocked > 0 {
		msg += fmt.Sprintf("; evictions were refused for %s", res.Blocked.Round(time.Second))
	}
	if len(res.Surged) > 0 {
		msg += "; surged " + strings.Join(res.Surged, ", ") + " to keep their PodDisruptionBudgets"
	}
	return msg
}

// giveBackForFailure is the end of a drain that gave up: giveBack undoes the
// cordon, and the drain's error is reported with what was done (and
// Cordoned with the give-back).
func giveBackForFailure(ctx context.Context, d Data, drainErr error) (Settles, error) {
	why := "the drain timed out"
	if !errors.Is(drainErr, ErrDrainTimedOut) {
		why = "the drain could not go on"
	}
	outcome, settles, err := giveBack(ctx, d, "Uncordoned after "+why+"; the retry cordons again")
	if err != nil {
		return settles, fmt.Errorf("draining node %s: %w; then %v", d.Update().Node, drainErr, err)
	}
	return settles, fmt.Errorf("draining node %s: %w; %s; retrying later", d.Update().Node, drainErr, outcome)
}
