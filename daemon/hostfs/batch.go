package hostfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// kind is what a path holds.
type kind string

const (
	kindAbsent  kind = "absent"
	kindFile    kind = "file"
	kindSymlink kind = "symlink"
	// kindOrig, in a journal entry only, says that the path's state before
	// the transaction is its original backup, orig/<path>, which the
	// transaction makes (durable) before it first changes the path: the
	// original is then copied once, not into the journal's data as well.
	// With no backup there, the path was never changed or is back.
	kindOrig kind = "orig"
)

// snapshot is the full state of one path: a regular file (contents, mode,
// owner), a symlink (target, owner) or nothing.
type snapshot struct {
	Kind kind   `json:"kind"`
	Data []byte `json:"data,omitempty"`
	// Mode holds the raw permission bits, setuid/setgid/sticky included (07777).
	Mode   uint32 `json:"mode,omitempty"`
	UID    int    `json:"uid,omitempty"`
	GID    int    `json:"gid,omitempty"`
	Target string `json:"target,omitempty"`
	// Blob locates the contents in a transaction's data file (journal
	// entries); nil when Data holds them.
	Blob *blob `json:"blob,omitempty"`

	// open, when set, streams the contents instead of Data: a node file
	// seen by read, or a journal's data file. Node files are never read
	// whole into memory; they can be of any size. size is their size.
	open func() (io.ReadCloser, error)
	size int64
	// digest, in a wanted state only, stands for Data (plan.File.Digest).
	digest *plan.Digest
}

// batch is the working set of one operation: the directories it opened
// (each resolved once through the root, so later steps use one path element
// each) and the directories whose entries changed and still need an fsync.
type batch struct {
	f     *FS
	dirs  map[string]*os.Root // by relative path; nil when known missing
	dirty map[string]bool
	ids   *idTable
	// parents caches resolveParents, reals realDir, by folder.
	parents map[string]resolved
	reals   map[string]string
}

func (f *FS) newBatch() *batch {
	return &batch{f: f, dirs: map[string]*os.Root{}, dirty: map[string]bool{}}
}

func (b *batch) close() {
	for _, d := range b.dirs {
		if d != nil {
			d.Close()
		}
	}
}

// dir returns the directory rel, creating it (and its parents, 0755) when
// create is set. Without create it returns nil, nil when rel is missing,
// or cannot exist: a name longer than NAME_MAX (the drop-in folder of a
// unit whose name is 254 or 255 bytes, which plan allows without drop-ins).
func (b *batch) dir(rel string, create bool) (*os.Root, error) {
	if d, ok := b.dirs[rel]; ok && (d != nil || !create) {
		return d, nil
	}
	var d *os.Root
	real, err := b.realDir(rel)
	if err == nil {
		d, err = b.f.root.OpenRoot(real)
	}
	if !create && errors.Is(err, syscall.ENAMETOOLONG) {
		b.dirs[rel] = nil
		return nil, nil
	}
	if isNotExist(err) {
		if !create {
			b.dirs[rel] = nil
			return nil, nil
		}
		if err = b.mkdirAll(real); err == nil {
			d, err = b.f.root.OpenRoot(real)
		}
	}
	if err != nil {
		return nil, err
	}
	b.dirs[rel] = d
	return d, nil
}

// mkdirAll creates rel (a real path: see realDir) and its missing parents
// with mode 0755 (whatever the umask) and makes each new entry durable by
// syncing its parent at once:
// directories are created rarely, and a committed file must not vanish with
// its new parent after a power loss.
func (b *batch) mkdirAll(rel string) error {
	if rel == "." {
		return nil
	}
	if fi, err := b.f.root.Stat(rel); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s: not a directory", rel)
		}
		return nil
	} else if !isNotExist(err) {
		return err
	}
	parent := path.Dir(rel)
	if err := b.mkdirAll(parent); err != nil {
		return err
	}
	if err := b.f.root.Mkdir(rel, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // created meanwhile
		}
		return err
	}
	if err := chmodDir(b.f.root, rel, 0o755); err != nil { // undo the umask
		return err
	}
	// Forget every cached "missing": a folder reached through a symlink is
	// cached under its config path, not rel.
	for k, d := range b.dirs {
		if d == nil {
			delete(b.dirs, k)
		}
	}
	return syncDir(b.f.root, parent)
}

// sync fsyncs every directory whose entries changed.
func (b *batch) sync() error {
	for rel := range b.dirty {
		d, err := b.dir(rel, false)
		if err != nil {
			return err
		}
		if d != nil {
			if err := syncDir(d, "."); err != nil {
				return err
			}
		}
		delete(b.dirty, rel)
	}
	return nil
}

func syncDir(r *os.Root, rel string) error {
	d, err := r.Open(rel)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", rel, err)
	}
	return nil
}

// exists reports whether rel exists (without following a final symlink).
func (b *batch) exists(rel string) (bool, error) {
	d, err := b.dir(path.Dir(rel), false)
	if err != nil || d == nil {
		return false, err
	}
	if _, err := d.Lstat(path.Base(rel)); err != nil {
		if isNotExist(err) || errors.Is(err, syscall.ENOTDIR) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// read returns the current state of rel. A directory or special file there
// is an error: the daemon only manages files.
func (b *batch) read(rel string) (snapshot, error) {
	absent := snapshot{Kind: kindAbsent}
	d, err := b.dir(path.Dir(rel), false)
	if err != nil || d == nil {
		return absent, err
	}
	name := path.Base(rel)
	fi, err := d.Lstat(name)
	if isNotExist(err) {
		return absent, nil
	}
	if err != nil {
		return absent, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	switch fi.Mode().Type() {
	case fs.ModeSymlink:
		target, err := d.Readlink(name)
		if err != nil {
			return absent, err
		}
		return snapshot{Kind: kindSymlink, Target: target, UID: int(st.Uid), GID: int(st.Gid)}, nil
	case 0:
		return readFile(d, name)
	}
	return absent, fmt.Errorf("%s is a %v, not a regular file", rel, fi.Mode().Type())
}

// put atomically makes rel hold s: a temp file (or symlink) in the same
// directory gets the contents, mode and owner, is fsynced and renamed over
// rel. An absent s removes rel. The directory entry change is recorded in
// b.dirty; the caller decides when to sync it.
func (b *batch) put(rel string, s snapshot) error {
	dirRel, name := path.Dir(rel), path.Base(rel)
	if s.Kind == kindAbsent {
		return b.remove(rel)
	}
	d, err := b.dir(dirRel, true)
	if err != nil {
		return err
	}
	if err := b.checkTarget(rel); err != nil {
		return err
	}
	if err := replace(d, name, s); err != nil {
		return err
	}
	b.dirty[dirRel] = true
	return nil
}

// replace atomically makes name in d hold s (a file or a symlink): a temp
// entry in the same directory gets it, is fsynced and renamed over name.
// The directory itself is not synced.
func replace(d *os.Root, name string, s snapshot) error {
	tmp := tempName(name)
	var err error
	switch s.Kind {
	case kindFile:
		err = writeTemp(d, tmp, s)
	case kindSymlink:
		if err = d.Remove(tmp); err != nil && !isNotExist(err) {
			return err
		}
		if err = d.Symlink(s.Target, tmp); err == nil {
			// A symlink cannot be opened to chown it: Lchown never
			// follows, on the temp name just made in d.
			err = d.Lchown(tmp, s.UID, s.GID)
		}
	default:
		err = fmt.Errorf("unknown kind %q", s.Kind)
	}
	if err == nil {
		err = d.Rename(tmp, name)
	}
	if err != nil {
		d.Remove(tmp)
		return err
	}
	return nil
}

func writeTemp(d *os.Root, tmp string, s snapshot) error {
	fh, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // a leftover from a crash
		if err = d.Remove(tmp); err == nil {
			fh, err = d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		}
	}
	if err != nil {
		return err
	}
	err = writeContents(fh, s)
	if err == nil {
		// Chown first: it clears setuid/setgid bits, which Chmod then sets.
		err = fh.Chown(s.UID, s.GID)
	}
	if err == nil {
		err = fh.Chmod(goMode(s.Mode))
	}
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkTarget refuses to replace a directory or a special file. A symlink
// there is never followed, wherever it leads: renaming over it replaces
// the link itself, as Ignition replaces it (it never follows a path's last
// element) and as machine-config-daemon's rename does.
func (b *batch) checkTarget(rel string) error {
	d, err := b.dir(path.Dir(rel), false)
	if err != nil || d == nil {
		return err
	}
	fi, err := d.Lstat(path.Base(rel))
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	switch fi.Mode().Type() {
	case 0, fs.ModeSymlink:
		return nil
	}
	return fmt.Errorf("target is a %s, not a regular file", typeName(fi.Mode().Type()))
}

// remove deletes the file or symlink rel; a missing one is fine.
func (b *batch) remove(rel string) error {
	d, err := b.dir(path.Dir(rel), false)
	if err != nil || d == nil {
		return err
	}
	name := path.Base(rel)
	fi, err := d.Lstat(name)
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", rel)
	}
	if err := d.Remove(name); err != nil && !isNotExist(err) {
		return err
	}
	b.dirty[path.Dir(rel)] = true
	return nil
}

// goMode turns raw permission bits (07777) into an fs.FileMode.
func goMode(raw uint32) fs.FileMode {
	m := fs.FileMode(raw & 0o777)
	if raw&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if raw&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if raw&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// rawMode turns a config mode into raw permission bits. It takes both the
// raw form of Ignition (04755) and Go's flags (fs.ModeSetuid|0755).
func rawMode(m fs.FileMode) uint32 {
	raw := uint32(m & 0o7777)
	if m&fs.ModeSetuid != 0 {
		raw |= syscall.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		raw |= syscall.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		raw |= syscall.S_ISVTX
	}
	return raw
}
