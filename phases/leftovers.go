package phases

import (
	"context"
	"fmt"
	"slices"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// What an update that stopped in its write step leaves behind, and how it
// is undone: the write step marks itself started in the progress record
// before its first change, journals every path and every unit's enablement
// before changing it, and commits (drops) the journal once all is written.
// A journal still there at a start is an update that may have written part
// of its config; it is rolled back before anything else happens.

// markWriteStarted saves, before the write step's first change, that the
// update may have written from now on; with a post action, also the boot
// this try writes in (a later boot pays the action, see progress.Owed): a
// write retried or resumed after a boot writes again in the new one. A
// boot ID that cannot be read is left out: the action then stays owed.
func markWriteStarted(ctx context.Context, d Data) error {
	rec := d.Progress()
	var now boot
	if a := d.Update().Action; a.Kind != plan.ActionNone || len(a.Actions) > 0 {
		now, _ = readBoot(ctx, d.Ports().Units)
	}
	if rec.Write.Started && rec.Write.BootID == now.mark() && rec.Write.BootStart == now.start {
		return nil
	}
	rec.Write.Started = true
	now.save(&rec.Write.BootID, &rec.Write.BootStart)
	return d.SaveProgress()
}

// recordUnitStates journals the enablement of every unit the write step may
// change, before any of its files: a unit the update creates is journaled
// as not found, so its rollback removes its links too.
func recordUnitStates(ctx context.Context, units Units, txn Txn, diff plan.Diff) error {
	all := slices.Concat(diff.ChangedUnits, diff.RemovedUnits)
	if len(all) == 0 || units == nil {
		return nil
	}
	states := make(map[string]string, len(all))
	for _, u := range all {
		state, err := units.IsEnabled(ctx, u.Name)
		if err != nil {
			return fmt.Errorf("reading the enablement of unit %s: %w", u.Name, err)
		}
		states[u.Name] = state
	}
	if err := txn.RecordUnitStates(states); err != nil {
		return fmt.Errorf("journaling the enablement of units: %w", err)
	}
	return nil
}

// Leftover is what CleanLeftovers did with one journal.
type Leftover struct {
	ID      string
	Message string
	// Warning marks a journal removed without its rollback.
	Warning bool
}

// journalFate is what becomes of a journal found on the node.
type journalFate int

const (
	// journalKeep: the current update's, whose write resumes, or the
	// replaced update's, which the give-back step rolls back.
	journalKeep journalFate = iota
	// journalCommitted: its update's write was done; only the journal's
	// removal was cut short.
	journalCommitted
	// journalRollBack: an update that never committed (a committed
	// journal is dropped before the write is recorded done), and nothing
	// was written since (no record, or one whose write has not begun).
	journalRollBack
	// journalStale: an update that never committed, older than the write
	// of the current update: rolling it back could undo that write.
	journalStale
)

// leftoverFate decides, from the progress record, what becomes of the
// journal id; pending lists every journal on the node.
func leftoverFate(rec *progress.Record, id string, pending []string) journalFate {
	switch {
	case rec != nil && rec.Health != nil && id == RollbackTxnID(rec.Desired) && rec.Health.Done(rollbackWrite):
		return journalCommitted
	case rec != nil && rec.Health != nil && id == RollbackTxnID(rec.Desired):
		return journalKeep // the health gate's rollback resumes its write (rollback.go)
	case rec != nil && id == rec.Desired && rec.Done(progress.StepWrite):
		return journalCommitted
	case rec != nil && id == rec.Desired:
		return journalKeep
	case rec != nil && rec.Inherited.Replaced != nil && id == rec.Inherited.Replaced.Desired && !rec.Done(progress.StepGiveBack):
		return journalKeep // the give-back step rolls it back
	case rec == nil, !rec.Write.Started && !rec.Done(progress.StepWrite) && !slices.Contains(pending, rec.Desired):
		return journalRollBack
	}
	return journalStale
}

// CleanLeftovers handles the journals on the node that belong to no current
// update (left by a lost progress record, or by a daemon that did not roll
// them back): one whose update committed is removed; one that never
// committed is rolled back, unless the current update has written since,
// which rolling it back could undo: it is then removed, with a warning.
// It says what it did with each.
func CleanLeftovers(host Host, rec *progress.Record) ([]Leftover, error) {
	pending, err := host.PendingTxns()
	if err != nil {
		return nil, err
	}
	var done []Leftover
	for _, id := range pending {
		fate := leftoverFate(rec, id, pending)
		if fate == journalKeep {
			continue
		}
		txn, err := host.BeginTxn(id)
		if err != nil {
			return done, fmt.Errorf("opening the leftover journal of %s: %w", id, err)
		}
		paths, units := txn.Journaled()
		l := Leftover{ID: id}
		switch fate {
		case journalCommitted:
			err = txn.Commit()
			l.Message = "Removed the journal of the update to " + id + ", whose write had finished"
		case journalRollBack:
			err = txn.Rollback()
			l.Message = "Rolled back the unfinished write of " + id + ", which no update owns any more: " +
				rolledBack(paths, units)
		default:
			err = txn.Commit()
			l.Warning = true
			l.Message = fmt.Sprintf("Removed the journal of the unfinished write of %s (%s) without rolling it "+
				"back: the update to %s has written since, and a rollback could undo its files", id,
				plan.Plural(paths, "path"), rec.Desired)
		}
		if err != nil {
			return done, fmt.Errorf("cleaning up the leftover journal of %s: %w", id, err)
		}
		done = append(done, l)
	}
	return done, nil
}
