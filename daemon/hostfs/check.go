package hostfs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// CheckFile returns nil if the file on disk has the given contents, mode
// and owner, else an error naming the path and what differs. Errors never
// hold file contents, which may be secret.
func (f *FS) CheckFile(file plan.File) error {
	b := f.newBatch()
	defer b.close()
	return b.checkFiles([]plan.File{file}, true)
}

// CheckUnit checks the contents of a unit's file (when it has contents) and
// of its drop-ins.
func (f *FS) CheckUnit(u plan.Unit) error {
	files, err := unitFiles(u)
	if err != nil {
		return err
	}
	b := f.newBatch()
	defer b.close()
	return b.checkFiles(files, false)
}

// checkFiles checks files, and their mode and owner when meta is set; it
// reports every file that differs.
func (b *batch) checkFiles(files []plan.File, meta bool) error {
	ts, err := b.targets(files)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range ts {
		if err := b.check(t, meta); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (b *batch) check(t target, meta bool) error {
	cur, err := b.read(t.rel)
	if err != nil {
		return fmt.Errorf("checking %s: %w", t.path, err)
	}
	var diffs []string
	switch cur.Kind {
	case kindAbsent:
		diffs = append(diffs, "missing")
	case kindSymlink:
		diffs = append(diffs, "is a symlink, want a regular file")
	default:
		same, err := sameAs(cur, t.want)
		if err != nil {
			return fmt.Errorf("checking %s: %w", t.path, err)
		}
		if !same {
			diffs = append(diffs, fmt.Sprintf("contents differ (%d bytes, want %d)", sizeOf(cur), sizeOf(t.want)))
		}
		if meta && cur.Mode != t.want.Mode {
			diffs = append(diffs, fmt.Sprintf("mode is %04o, want %04o", cur.Mode, t.want.Mode))
		}
		if meta && (cur.UID != t.want.UID || cur.GID != t.want.GID) {
			diffs = append(diffs, fmt.Sprintf("owner is %d:%d, want %d:%d", cur.UID, cur.GID, t.want.UID, t.want.GID))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s: %s", t.path, strings.Join(diffs, ", "))
	}
	return nil
}
