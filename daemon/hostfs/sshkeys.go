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

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// User core owns its home, so it can put anything at ~/.ssh between two
// steps of the daemon, e.g. a symlink to ../../etc: the SSH folder and key
// file are never reached through a symlink, and their owner and mode are
// set through open handles.

// sshPaths are the paths of core's SSH keys, relative to the root.
type sshPaths struct{ home, dir, keys string }

func sshRels(core userEntry) (sshPaths, error) {
	if !path.IsAbs(core.home) {
		return sshPaths{}, fmt.Errorf("home of user core %q is not absolute", core.home)
	}
	home, err := rel(path.Clean(core.home))
	if err != nil {
		return sshPaths{}, fmt.Errorf("home of user core: %w", err)
	}
	return sshPaths{home: home, dir: home + "/.ssh", keys: home + "/.ssh/authorized_keys"}, nil
}

// checkSSH refuses core's SSH keys when the folders above its home are
// unsafe (see checkParents), or when its home, ~/.ssh or the key file is a
// symlink, is not the right type, or is owned by another user than core or
// root. Missing ones are fine: the daemon creates them.
func (b *batch) checkSSH(core userEntry) (sshPaths, error) {
	p, err := sshRels(core)
	if err != nil {
		return p, err
	}
	if _, err := b.checkParents(p.home); err != nil {
		return p, err
	}
	for _, c := range []struct {
		rel  string
		want fs.FileMode
	}{{p.home, fs.ModeDir}, {p.dir, fs.ModeDir}, {p.keys, 0}} {
		fi, err := b.lstat(c.rel)
		if isNotExist(err) {
			return p, nil
		}
		if err != nil {
			return p, err
		}
		if err := checkSSHEntry(c.rel, fi, c.want, core.uid); err != nil {
			return p, err
		}
	}
	return p, nil
}

// checkSSHEntry refuses a symlink, a wrong type or an owner other than
// core (uid) and root.
func checkSSHEntry(rel string, fi fs.FileInfo, want fs.FileMode, uid int) error {
	switch t := fi.Mode().Type(); {
	case t == fs.ModeSymlink:
		return fmt.Errorf("/%s is a symlink: refusing to follow it for user core's SSH keys", rel)
	case t != want:
		return fmt.Errorf("/%s is a %v, want a %v", rel, typeName(t), typeName(want))
	}
	if owner := int(fi.Sys().(*syscall.Stat_t).Uid); owner != 0 && owner != uid {
		return fmt.Errorf("/%s is owned by uid %d, neither core (%d) nor root", rel, owner, uid)
	}
	return nil
}

func typeName(t fs.FileMode) string {
	switch t {
	case 0:
		return "regular file"
	case fs.ModeDir:
		return "folder"
	}
	return t.String()
}

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

// WriteSSHKeys writes the authorized keys of user "core" to
// ~core/.ssh/authorized_keys (home from the node's /etc/passwd): the .ssh
// folder 0700 and the file 0600, both owned by core. The folder's state
// before (absent, or its mode and owner) is journaled with the file, so
// Rollback puts both back.
func (t *Txn) WriteSSHKeys(keys []string) error {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	b := t.f.newBatch()
	defer b.close()
	file, err := b.sshKeysFile(keys)
	if err != nil {
		return err
	}
	core, err := b.user("core")
	if err != nil {
		return err
	}
	p, err := b.checkSSH(core)
	if err != nil {
		return fmt.Errorf("writing SSH keys: %w", err)
	}
	ts, err := b.targets([]plan.File{file})
	if err != nil {
		return err
	}
	isSSHDir := func(fi fs.FileInfo) error { return checkSSHEntry(p.dir, fi, fs.ModeDir, core.uid) }
	st, err := b.pinDir(p.dir, isSSHDir)
	if err != nil {
		return fmt.Errorf("writing SSH keys: %w", err)
	}
	if err := t.recordDir(p.dir, st); err != nil {
		return err
	}
	if err := t.record(b, []string{file.Path}, 1); err != nil {
		return err
	}
	if err := b.makeSSHDir(p, core, isSSHDir); err != nil {
		return fmt.Errorf("writing SSH keys: %w", err)
	}
	ts[0].pinned = true
	return t.apply(b, ts, nil)
}

// makeSSHDir creates ~core/.ssh when missing, then sets its owner (core)
// and mode (0700) through a handle opened without following symlinks.
func (b *batch) makeSSHDir(p sshPaths, core userEntry, ok func(fs.FileInfo) error) error {
	home, err := b.dir(p.home, true)
	if err != nil {
		return err
	}
	if b.dirs[p.dir] == nil {
		if err := home.Mkdir(".ssh", 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		b.dirty[p.home] = true
		if _, err := b.pinDir(p.dir, ok); err != nil {
			return err
		}
	}
	fh, err := openNoFollow(home, ".ssh")
	if err != nil {
		return err
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil {
		return err
	} else if pinned, err := b.dirs[p.dir].Stat("."); err != nil || !os.SameFile(fi, pinned) {
		return fmt.Errorf("/%s changed while being written", p.dir)
	}
	if err := fh.Chown(core.uid, core.gid); err != nil {
		return err
	}
	return fh.Chmod(0o700)
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
