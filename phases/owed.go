package phases

import (
	"context"
	"fmt"
	"path"
	"slices"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// addOwed merges into the update's post action the one that earlier
// updates, written and replaced before it ran, left undone (the record's
// Owed): the node runs their files, which take effect only through it. A
// boot since the last of them wrote brought their files up and paid it
// all: the record then drops it, so that it keeps only what the update
// merged (an update that replaces this one relies on that). A boot after
// this prepare does not pay it: the plan is kept, as every plan is. A
// reload or restart of a unit the desired config removes is not owed: the
// unit is gone.
func addOwed(ctx context.Context, d Data) error {
	rec, u := d.Progress(), d.Update()
	o := rec.Inherited.Owed
	if o == nil {
		return nil
	}
	if o.BootID != "" && d.Ports().Units != nil {
		now, err := readBoot(ctx, d.Ports().Units)
		if err != nil {
			return fmt.Errorf("reading the boot ID: %w", err)
		}
		booted, err := now.since(o.BootID, o.BootStart)
		if err != nil {
			return fmt.Errorf("checking what is owed: %w", err)
		}
		if booted {
			rec.Inherited.Owed = nil
			return nil
		}
	}
	owed := restoreAction(&o.Action)
	if owed.Kind != plan.ActionReboot {
		// Their drain ran before their write, and their cordon stays
		// until this update's uncordon: what is owed runs after the write.
		owed.Actions = slices.DeleteFunc(owed.Actions, func(x plan.Action) bool {
			return x.Type == plan.ActDrain || removesUnit(u.Diff, x.Unit)
		})
		owed = plan.Restored(false, owed.Actions, false, "", nil)
	}
	u.Action = u.Action.Owing(owed, o.Configs)
	return nil
}

// removesUnit reports whether diff removes the unit, or its unit file.
func removesUnit(diff plan.Diff, unit string) bool {
	if unit == "" {
		return false
	}
	if slices.ContainsFunc(diff.RemovedUnits, func(x plan.Unit) bool { return x.Name == unit }) {
		return true
	}
	return slices.ContainsFunc(unitDirs(), func(dir string) bool {
		return slices.Contains(diff.RemovedFiles, path.Join(dir, unit))
	})
}
