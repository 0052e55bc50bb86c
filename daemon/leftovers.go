package daemon

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// cleanLeftovers rolls back or removes the journals on the node that no
// current update owns (phases.CleanLeftovers), before anything else of the
// pass runs, and says so in the log and an Event.
// A failure is reported like a failed write (NodeDegraded).
func (d *Daemon) cleanLeftovers(ctx context.Context, rec *progress.Record, current, desired string) error {
	done, err := phases.CleanLeftovers(d.Env.Host, rec)
	for _, l := range done {
		if l.Warning {
			d.Log.Warn(l.Message, zap.String("node", d.node.Name), zap.String("journal", l.ID))
		} else {
			d.Log.Info(l.Message, zap.String("node", d.node.Name), zap.String("journal", l.ID))
		}
		if d.events != nil {
			d.events.Event(true, l.Warning, "LeftoverJournal", l.Message)
		}
	}
	if err == nil {
		return nil
	}
	if rec == nil {
		rec = progress.New(current, desired)
	}
	return d.fail(ctx, rec, &phases.StepError{Phase: progress.StepWrite, Condition: status.AppliedFilesAndOS,
		Err: fmt.Errorf("cleaning up leftover journals on node %s: %w", d.node.Name, err)})
}
