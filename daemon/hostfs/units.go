package hostfs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

const unitDir = "/etc/systemd/system"

// unitFiles returns the files of a unit: its unit file (when it has
// contents) and its drop-ins, all root-owned 0644.
func unitFiles(u plan.Unit) ([]plan.File, error) {
	if !validName(u.Name) {
		return nil, fmt.Errorf("invalid unit name %q", u.Name)
	}
	var files []plan.File
	if u.Contents != nil {
		files = append(files, plan.File{Path: unitDir + "/" + u.Name, Contents: []byte(*u.Contents), Mode: 0o644})
	}
	for _, name := range slices.Sorted(maps.Keys(u.Dropins)) {
		if !validName(name) {
			return nil, fmt.Errorf("unit %s: invalid drop-in name %q", u.Name, name)
		}
		files = append(files, plan.File{Path: dropinPath(u.Name, name), Contents: []byte(u.Dropins[name]), Mode: 0o644})
	}
	return files, nil
}

func dropinPath(unit, name string) string {
	return unitDir + "/" + unit + ".d/" + name
}

// WriteUnit writes a unit's file (when it has contents) and its drop-ins.
// Files of the unit that the daemon wrote earlier and the unit no longer
// has (its unit file when Contents is nil, dropped drop-ins) are removed,
// restoring their originals; files the daemon did not write are left alone.
// Masking and enabling are not done here.
func (t *Txn) WriteUnit(u plan.Unit) error {
	files, err := unitFiles(u)
	if err != nil {
		return err
	}
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	b := t.f.newBatch()
	defer b.close()
	ts, err := b.targets(files)
	if err != nil {
		return err
	}
	stale, err := b.staleUnitFiles(u, false)
	if err != nil {
		return err
	}
	if err := t.apply(b, ts, stale); err != nil {
		return fmt.Errorf("writing unit %s: %w", u.Name, err)
	}
	return nil
}

// RemoveUnit removes a unit the config no longer has: its unit file (when
// it had contents or the daemon wrote it) and its drop-ins, restoring
// originals like RemoveFile.
func (t *Txn) RemoveUnit(u plan.Unit) error {
	if !validName(u.Name) {
		return fmt.Errorf("invalid unit name %q", u.Name)
	}
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	b := t.f.newBatch()
	defer b.close()
	paths, err := b.staleUnitFiles(u, true)
	if err != nil {
		return err
	}
	if err := t.apply(b, nil, paths); err != nil {
		return fmt.Errorf("removing unit %s: %w", u.Name, err)
	}
	return nil
}

// staleUnitFiles returns the paths of u's files to remove: those the daemon
// wrote that u does not have, or, when all is set, every file of u.
func (b *batch) staleUnitFiles(u plan.Unit, all bool) ([]string, error) {
	var paths []string
	unitPath := unitDir + "/" + u.Name
	if all && u.Contents != nil {
		paths = append(paths, unitPath)
	} else if u.Contents == nil {
		ours, err := b.managed(unitPath[1:])
		if err != nil {
			return nil, err
		}
		if ours {
			paths = append(paths, unitPath)
		}
	}
	ours, err := b.managedNames(unitPath[1:] + ".d")
	if err != nil {
		return nil, err
	}
	if all {
		ours = append(ours, slices.Collect(maps.Keys(u.Dropins))...)
	}
	slices.Sort(ours)
	for _, name := range slices.Compact(ours) {
		if _, keep := u.Dropins[name]; all || !keep {
			paths = append(paths, dropinPath(u.Name, name))
		}
	}
	return paths, nil
}

// managedNames returns the names in the directory dir (relative) that the
// daemon wrote, from its bookkeeping.
func (b *batch) managedNames(dir string) ([]string, error) {
	var names []string
	for _, base := range []string{origRel, noOrigRel} {
		d, err := b.dir(base+"/"+dir, false)
		if err != nil {
			return nil, err
		}
		if d == nil {
			continue
		}
		fh, err := d.Open(".")
		if err != nil {
			return nil, err
		}
		entries, err := fh.Readdirnames(-1)
		fh.Close()
		if err != nil {
			return nil, err
		}
		for _, name := range entries {
			if !strings.HasSuffix(name, tempSuffix) {
				names = append(names, name)
			}
		}
	}
	return names, nil
}
