package hostfs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"
)

// The SSH folder of a user is the user's: it is opened without following a
// symlink (openNoFollow), pinned for the rest of a batch (pinDir), and its
// state before a write is journaled as a folder entry (recordDir), which a
// rollback pins first (pinDirs) and puts back (restoreDir).

// openNoFollow opens the folder name in parent without following a
// symlink there (O_NOFOLLOW: os.Root follows in-root symlinks). It wraps
// fs.ErrNotExist when name is missing.
func openNoFollow(parent *os.Root, name string) (*os.File, error) {
	pf, err := parent.Open(".")
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	fd, err := unix.Openat(int(pf.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("opening %s: %w", name, fs.ErrNotExist)
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("%s is not a folder (a symlink?): refusing to follow it", name)
	case err != nil:
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// pinDir opens the folder rel without following a final symlink, checks
// it with ok, and caches it in the batch, so that every later step of the
// batch uses that very folder. A missing rel is cached as missing; st is
// then nil.
func (b *batch) pinDir(rel string, ok func(fs.FileInfo) error) (st *syscall.Stat_t, err error) {
	parent, err := b.dir(path.Dir(rel), false)
	if err != nil || parent == nil {
		b.dirs[rel] = nil
		return nil, err
	}
	fh, err := openNoFollow(parent, path.Base(rel))
	if isNotExist(err) {
		b.dirs[rel] = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("/%s: %w", rel, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err == nil {
		err = ok(fi)
	}
	if err != nil {
		return nil, err
	}
	d, err := parent.OpenRoot(path.Base(rel))
	if err != nil {
		return nil, err
	}
	if di, err := d.Stat("."); err != nil || !os.SameFile(di, fi) {
		d.Close()
		return nil, fmt.Errorf("/%s changed while being opened", rel)
	}
	if old := b.dirs[rel]; old != nil {
		old.Close()
	}
	b.dirs[rel] = d
	return fi.Sys().(*syscall.Stat_t), nil
}

// dirState is a folder's journaled state: absent, or its mode and owner.
type dirState struct {
	Exists bool   `json:"exists"`
	Mode   uint32 `json:"mode,omitempty"`
	UID    int    `json:"uid,omitempty"`
	GID    int    `json:"gid,omitempty"`
}

// recordDir journals the state st of the folder rel (nil: absent), once.
func (t *Txn) recordDir(rel string, st *syscall.Stat_t) error {
	p := "/" + rel
	if t.closed {
		return fmt.Errorf("transaction %s is closed", t.id)
	}
	if t.recorded[p] {
		return nil
	}
	e := entry{Path: p, Dir: &dirState{}}
	if st != nil {
		e.Dir = &dirState{Exists: true, Mode: st.Mode & 0o7777, UID: int(st.Uid), GID: int(st.Gid)}
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("journaling %s: %w", p, err)
	}
	_, err = t.journal.Write(append(line, '\n'))
	if err == nil {
		err = t.journal.Sync()
	}
	if err != nil {
		t.journal.Truncate(t.size) // best effort: never leave half a line
		return fmt.Errorf("writing journal of transaction %s: %w", t.id, err)
	}
	t.size += int64(len(line) + 1)
	t.paths = append(t.paths, p)
	t.recorded[p] = true
	if st == nil {
		t.created = append(t.created, p)
	}
	return nil
}

// pinDirs opens every journaled folder that exists without following a
// symlink, before a rollback restores anything in them: a folder now
// replaced by a symlink stops the rollback instead of leading it elsewhere.
func (b *batch) pinDirs(entries []entry) error {
	for _, e := range entries {
		if e.Dir == nil {
			continue
		}
		r, err := rel(e.Path)
		if err == nil {
			_, err = b.pinDir(r, func(fs.FileInfo) error { return nil })
		}
		if err != nil {
			return fmt.Errorf("rolling back %s: %w", e.Path, err)
		}
	}
	return nil
}

// restoreDir puts a journaled folder back: removed when it was absent (if
// still empty: what else is in it is not the daemon's), else its mode and
// owner set through a handle.
func (b *batch) restoreDir(e entry) error {
	r, err := rel(e.Path)
	if err != nil {
		return err
	}
	parent, err := b.dir(path.Dir(r), e.Dir.Exists)
	if err != nil || parent == nil {
		return err
	}
	name := path.Base(r)
	if !e.Dir.Exists {
		if d := b.dirs[r]; d != nil {
			d.Close()
		}
		b.dirs[r] = nil
		err := parent.Remove(name)
		if err == nil {
			b.dirty[path.Dir(r)] = true
		}
		if err == nil || isNotExist(err) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return nil
		}
		return err
	}
	if err := parent.Mkdir(name, 0o700); err == nil {
		b.dirty[path.Dir(r)] = true
	} else if !errors.Is(err, fs.ErrExist) {
		return err
	}
	fh, err := openNoFollow(parent, name)
	if err != nil {
		return err
	}
	defer fh.Close()
	if err := fh.Chown(e.Dir.UID, e.Dir.GID); err != nil {
		return err
	}
	return fh.Chmod(goMode(e.Dir.Mode))
}
