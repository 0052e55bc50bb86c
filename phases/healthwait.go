package phases

import (
	"context"
	"fmt"

	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// HealthWait keeps a config that failed the health gate on another
// node (its failedConfig annotation names it) from spreading: before
// anything is cordoned or written, the update waits, saying on which node
// the config failed, until no node records it as failed any more (that
// node retried it successfully, or an administrator removed the
// annotation) or this node's desired config changes. Nothing is held while
// it waits.
func HealthWait() Step {
	return Step{
		Name: progress.StepFailedElsewhere, Show: Show{Quick: true},
		Needed: func(d Data) (bool, string) {
			if g := d.Ports().Health; g == nil || g.Probe == nil {
				return false, "No health gate is configured"
			}
			return true, ""
		},
		Cut: &Cut{}, // nothing held: a new desired config ends its gate
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			// The group's message as when this phase is skipped.
			return Outcome{Reason: status.UpdatePrepared, Message: groupOf(status.UpdatePrepared).done(d.Update().DesiredName)}, nil
		},
	}
}

// NotFailedElsewhere is HealthWait's gate: the config failed the health
// gate on no other node.
func NotFailedElsewhere() Gate {
	return Gate{Name: "failed-elsewhere", Wait: waitNotFailedElsewhere}
}

func waitNotFailedElsewhere(ctx context.Context, d Data) error {
	g := d.Ports().Health
	name := d.Update().DesiredName
	err := g.Probe.WaitNotFailedOn(ctx, name, func(node string) {
		d.Waiting(WaitFailedElsewhere) // the runner ends it once the Wait returns
		_ = d.Report(ctx, fmt.Sprintf("Config %s failed the health gate on node %s; not applying it here until it "+
			"passes there or the node's failedConfig annotation is removed", name, node))
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("waiting until %s no longer fails the health gate elsewhere: %w", name, err)
	}
	return ctx.Err()
}
