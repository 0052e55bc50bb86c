package hostfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"syscall"
)

// The folders a transaction creates outlive its commit: the health gate's
// rollback of a committed update removes the files the update added, and
// then these folders (CreatedDirs, RemoveEmptyDirs), so that a later
// config with a file at such a path is not refused.

// CreatedDirs are the folders this transaction's writes created (node
// paths, parents first), as journaled (newDirs).
func (t *Txn) CreatedDirs() []string {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return slices.Clone(t.created)
}

// RemoveEmptyDirs removes those of the folders ps (node paths, parents
// first, as CreatedDirs gives them) that are empty, deepest first, each
// journaled before it goes (so that Rollback makes it again with its mode
// and owner). A folder that holds anything (a file someone put there
// since), is no folder any more (a symlink is never followed), or is gone
// is left as it is. It returns how many it removed.
func (t *Txn) RemoveEmptyDirs(ps []string) (int, error) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.closed {
		return 0, fmt.Errorf("transaction %s is closed", t.id)
	}
	b := t.f.newBatch()
	defer b.close()
	removed := 0
	for _, p := range slices.Backward(ps) {
		r, err := rel(p)
		if err != nil {
			return removed, err
		}
		gone, err := t.removeEmptyDir(b, r)
		if err != nil {
			return removed, fmt.Errorf("removing the folder %s the update made: %w", p, err)
		}
		if gone {
			removed++
		}
	}
	if err := b.sync(); err != nil {
		return removed, err
	}
	return removed, nil
}

// removeEmptyDir removes the folder r when it is one and empty, after
// journaling it.
func (t *Txn) removeEmptyDir(b *batch, r string) (bool, error) {
	if _, err := b.checkParents(r); err != nil {
		return false, err
	}
	parent, err := b.dir(path.Dir(r), false)
	if err != nil || parent == nil {
		return false, err
	}
	name := path.Base(r)
	fi, err := parent.Lstat(name)
	if isNotExist(err) || err == nil && fi.Mode().Type() != fs.ModeDir {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	d, err := parent.Open(name)
	if err != nil {
		return false, err
	}
	entries, err := d.ReadDir(1)
	d.Close()
	if len(entries) > 0 {
		return false, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, fmt.Errorf("/%s: no owner to journal", r)
	}
	if err := t.recordDir(r, st); err != nil {
		return false, err
	}
	if cached := b.dirs[r]; cached != nil {
		cached.Close()
	}
	b.dirs[r] = nil
	if err := parent.Remove(name); err != nil {
		if isNotExist(err) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return false, nil // filled or removed meanwhile: left as it is
		}
		return false, err
	}
	b.dirty[path.Dir(r)] = true
	return true, nil
}
