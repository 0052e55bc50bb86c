package phases

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// ReasonRolledBack is AppliedFilesAndOS's reason once a replaced update's
// writes were rolled back.
const ReasonRolledBack = "RolledBack"

// GiveBack gives back what an update replaced before its write was done
// still holds (the record's Replaced): what it wrote is rolled back from
// its journal, then its cordon lifted, so that this update starts from the
// node as it was, uncordoned, whatever it needs. A running update replaced before it wrote
// does this itself (its steps' Undo); this step is for one that did not get to
// (a restart, a SIGTERM or a failure came between, or it was writing).
func GiveBack() Step {
	return Step{
		Name: progress.StepGiveBack, Show: Show{Quick: true},
		Needed: func(d Data) (bool, string) {
			if d.Progress().Inherited.Replaced == nil {
				return false, "No replaced update holds anything"
			}
			return true, ""
		},
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			rp := d.Progress().Inherited.Replaced
			settles, err := rollBackReplaced(ctx, d, rp)
			if err != nil {
				return Outcome{}, err
			}
			msg := "Uncordoned: the update to " + rp.Desired + " was replaced by a new desired config before it wrote anything"
			if rp.WriteStarted {
				msg = "Uncordoned: the update to " + rp.Desired + " was replaced by a new desired config while it " +
					"was writing; what it had written was rolled back"
			}
			outcome, lifted, err := liftCordon(ctx, d, rp.CordonOwn, rp.Cordoned, rp.WriteStarted, msg)
			settles = settles.Also(lifted.Conditions...)
			if err != nil {
				return Outcome{Settles: settles}, fmt.Errorf("giving back the cordon of the replaced update to %s: %w",
					rp.Desired, err)
			}
			log := LogFrom(ctx, zap.NewNop())
			log.Info("Replaced update gave back its cordon", zap.String("replaced", rp.Desired),
				zap.String("result", outcome))
			// Cordoned says so before the new update's status starts (WriteNow).
			return Outcome{Message: "The replaced update to " + rp.Desired + " gave back: " + outcome, WriteNow: true,
				Settles: settles}, nil
		},
	}
}

// rollBackReplaced rolls back, from its journal, what the replaced update
// wrote before a new desired config replaced it (a restart came between: a
// running write runs to its end first). It settles AppliedFilesAndOS=False
// saying what was rolled back and records an Event; nothing when no
// journal was left.
func rollBackReplaced(ctx context.Context, d Data, rp *progress.Replaced) (Settles, error) {
	fail := func(err error) error {
		return &StepError{Phase: progress.StepWrite, Condition: status.AppliedFilesAndOS,
			Err: fmt.Errorf("rolling back the write of %s, which a new desired config replaced: %w", rp.Desired, err)}
	}
	pending, err := d.Ports().Host.PendingTxns()
	if err != nil {
		return Settles{}, fail(err)
	}
	if !slices.Contains(pending, rp.Desired) {
		return Settles{}, nil // never begun, or already rolled back
	}
	txn, err := d.Ports().Host.BeginTxn(rp.Desired)
	if err != nil {
		return Settles{}, fail(err)
	}
	paths, units := txn.Journaled()
	if err := txn.Rollback(); err != nil {
		return Settles{}, fail(err)
	}
	rp.WriteStarted = true // a record older than the flag: the give-back says what happened
	msg := fmt.Sprintf("Rolled back the write of %s, which a new desired config replaced: %s", rp.Desired,
		rolledBack(paths, units))
	d.Event(true, false, ReasonRolledBack, msg)
	LogFrom(ctx, zap.NewNop()).Info("Rolled back the replaced update's writes", zap.String("replaced", rp.Desired),
		zap.Int("paths", paths), zap.Strings("units", units))
	return Settles{Conditions: []Condition{condition(status.AppliedFilesAndOS, metav1.ConditionFalse, ReasonRolledBack, msg)}}, nil
}

func rolledBack(paths int, units []string) string {
	s := "restored " + plan.Plural(paths, "path")
	if len(units) > 0 {
		s += " and the enablement of " + plan.Plural(len(units), "unit") + " (" + strings.Join(units, ", ") + ")"
	}
	return s
}
