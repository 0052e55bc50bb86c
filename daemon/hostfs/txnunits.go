package hostfs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Units is what a rollback needs of the node's systemd to put back the
// units' enablement the journal recorded (phases.Units has these methods).
type Units interface {
	IsEnabled(ctx context.Context, unit string) (string, error)
	Enable(ctx context.Context, units ...string) error
	Disable(ctx context.Context, units ...string) error
	Mask(ctx context.Context, units ...string) error
	Unmask(ctx context.Context, units ...string) error
	DaemonReload(ctx context.Context) error
}

// Enablement and masking go through systemd, not through the journal's
// file entries: the links `systemctl enable` makes follow the unit's
// [Install] section (WantedBy, RequiredBy, Alias, Also, template
// instances), which only systemd knows, so their paths cannot be journaled
// before the call makes them. What is journaled instead is the unit's state
// (`systemctl is-enabled`) before the update's first change to it, and the
// rollback asks systemd to get back to that state: before the files are
// restored it unmasks and disables the unit (disable removes every link to
// it under /etc, whatever section made it), and once the old unit file is
// back it enables or masks it again when it was so. That restores exactly
// the states an update can change a unit from by its own calls: enabled,
// disabled, static, masked and not-found. A unit found in another state
// (indirect, alias, linked, generated, ...) is only unmasked, never
// disabled, so that nothing the update did not make is removed; its state
// is not checked.
func exactState(state string) bool {
	switch state {
	case "enabled", "disabled", "static", "masked", "not-found":
		return true
	}
	return false
}

// RecordUnitStates journals the enablement of units (name to `systemctl
// is-enabled` state) before the transaction first changes it, with one
// append and one fsync. A unit already journaled keeps its first state, so
// a re-run after a crash keeps the state from before the first attempt.
// Rolling back such a journal needs RollbackWith.
func (t *Txn) RecordUnitStates(states map[string]string) error {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.closed {
		return fmt.Errorf("transaction %s is closed", t.id)
	}
	var buf bytes.Buffer
	var added []string
	for _, name := range slices.Sorted(maps.Keys(states)) {
		if _, ok := t.units[name]; ok {
			continue
		}
		e := entry{Unit: name, State: states[name]}
		if !validName(name) || !e.valid() {
			return fmt.Errorf("journaling the enablement of unit %q: invalid name or state %q", name, e.State)
		}
		if err := writeLine(&buf, e); err != nil {
			return fmt.Errorf("journaling the enablement of unit %s: %w", name, err)
		}
		added = append(added, name)
	}
	if len(added) == 0 {
		return nil
	}
	if err := t.append(buf.Bytes()); err != nil {
		return err
	}
	for _, name := range added {
		t.units[name] = states[name]
	}
	return nil
}

// Journaled returns what the journal holds: how many paths it recorded, and
// the names of the units whose enablement it recorded, sorted.
func (t *Txn) Journaled() (paths int, units []string) {
	return len(t.paths), slices.Sorted(maps.Keys(t.units))
}

// append writes whole journal lines with one write and one fsync.
// writeLine adds e to buf as one journal line.
func writeLine(buf *bytes.Buffer, e entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	buf.Write(line)
	buf.WriteByte('\n')
	return nil
}

func (t *Txn) append(lines []byte) error {
	_, err := t.journal.Write(lines)
	if err == nil {
		err = t.journal.Sync()
	}
	if err != nil {
		t.journal.Truncate(t.size) // best effort: never leave half a line
		return fmt.Errorf("writing journal of transaction %s: %w", t.id, err)
	}
	t.size += int64(len(lines))
	return nil
}

// RollbackWith is Rollback that also puts back, through units, the
// enablement of the units the journal recorded (see RecordUnitStates).
func (t *Txn) RollbackWith(ctx context.Context, units Units) error {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.closed {
		return fmt.Errorf("transaction %s is closed", t.id)
	}
	b := t.f.newBatch()
	defer b.close()
	entries, _, err := loadJournal(t.journal)
	if err != nil {
		return fmt.Errorf("rolling back transaction %s: %w", t.id, err)
	}
	if err := b.pinDirs(entries); err != nil {
		return err
	}
	// Temporary files left by a crash go first: the folders the
	// transaction made must be empty to be removed.
	if err := t.removeTempLeftovers(b); err != nil {
		return fmt.Errorf("rolling back transaction %s: %w", t.id, err)
	}
	restorer := unitRestorer{units: units, entries: entries}
	if err := restorer.release(ctx); err != nil {
		return fmt.Errorf("rolling back transaction %s: %w", t.id, err)
	}
	for _, e := range slices.Backward(entries) {
		if e.Unit != "" {
			continue
		}
		e.File, e.Orig = t.load(e.File), t.load(e.Orig)
		if err := b.restore(e); err != nil {
			return fmt.Errorf("rolling back %s: %w", e.Path, err)
		}
	}
	if err := b.sync(); err != nil {
		return fmt.Errorf("rolling back transaction %s: %w", t.id, err)
	}
	if err := restorer.restore(ctx); err != nil {
		return fmt.Errorf("rolling back transaction %s: %w", t.id, err)
	}
	return t.drop(b)
}

// valid reports whether e is a whole entry: of a path or of a unit.
func (e entry) valid() bool {
	if e.Unit != "" {
		return e.Path == "" && e.State != "" && !strings.ContainsAny(e.State, "\n\x00")
	}
	return e.Path != ""
}

// unitRestorer puts back the enablement of the units of a journal.
type unitRestorer struct {
	units   Units
	entries []entry
}

func (r unitRestorer) states() []entry {
	var out []entry
	for _, e := range r.entries {
		if e.Unit != "" {
			out = append(out, e)
		}
	}
	return out
}

// fileChanged reports whether the journal holds the unit's unit file.
func (r unitRestorer) fileChanged(unit string) bool {
	return slices.ContainsFunc(r.entries, func(e entry) bool { return e.Path == unitDir+"/"+unit })
}

// release runs before the files are restored: each unit whose state
// changed, or whose unit file the update changed, is unmasked and its links
// removed (while the update's unit file, whose [Install] section made them,
// is still there). A unit that is as it was is left alone.
func (r unitRestorer) release(ctx context.Context) error {
	states := r.states()
	if len(states) == 0 {
		return nil
	}
	if r.units == nil {
		return errors.New("the journal holds units' enablement, and no systemd was given to restore it")
	}
	for _, e := range states {
		cur, err := r.units.IsEnabled(ctx, e.Unit)
		if err != nil {
			return fmt.Errorf("restoring the enablement of unit %s: %w", e.Unit, err)
		}
		if cur == e.State && !r.fileChanged(e.Unit) {
			continue
		}
		if cur == "masked" {
			if err := r.units.Unmask(ctx, e.Unit); err != nil {
				return fmt.Errorf("restoring the enablement of unit %s: %w", e.Unit, err)
			}
			if cur, err = r.units.IsEnabled(ctx, e.Unit); err != nil {
				return fmt.Errorf("restoring the enablement of unit %s: %w", e.Unit, err)
			}
		}
		if exactState(e.State) && (cur == "enabled" || cur == "indirect") {
			if err := r.units.Disable(ctx, e.Unit); err != nil {
				return fmt.Errorf("restoring the enablement of unit %s: %w", e.Unit, err)
			}
		}
	}
	return nil
}

// restore runs once the files are back: a unit that was enabled or masked
// is enabled or masked again (by the old unit file's [Install] section),
// systemd reloaded, and every unit's state checked against the journal.
func (r unitRestorer) restore(ctx context.Context) error {
	if r.units == nil {
		return nil
	}
	states := r.states()
	for _, e := range states {
		cur, err := r.units.IsEnabled(ctx, e.Unit)
		if err != nil {
			return fmt.Errorf("restoring the enablement of unit %s: %w", e.Unit, err)
		}
		if cur == e.State {
			continue
		}
		switch e.State {
		case "enabled":
			err = r.units.Enable(ctx, e.Unit)
		case "masked":
			err = r.units.Mask(ctx, e.Unit)
		}
		if err != nil {
			return fmt.Errorf("restoring the enablement of unit %s: %w", e.Unit, err)
		}
	}
	if len(states) > 0 || slices.ContainsFunc(r.entries, func(e entry) bool { return strings.HasPrefix(e.Path, "/etc/systemd/") }) {
		if err := r.units.DaemonReload(ctx); err != nil {
			return fmt.Errorf("restoring units: %w", err)
		}
	}
	var errs []error
	for _, e := range states {
		if !exactState(e.State) {
			continue
		}
		cur, err := r.units.IsEnabled(ctx, e.Unit)
		if err == nil && cur != e.State {
			err = fmt.Errorf("is %s, was %s before the update", cur, e.State)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restoring the enablement of unit %s: %w", e.Unit, err))
		}
	}
	return errors.Join(errs...)
}
