package hostfs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// maxLinks bounds the symlinks followed on one path, as the kernel does.
const maxLinks = 40

// resolved is one folder path as checkParents or realDir found it.
type resolved struct {
	// real is the folder's path without symlinks, relative to the root;
	// the missing part of the path is appended as it is.
	real string
	// open: other users may add entries to the folder (sticky and writable).
	open bool
}

// checkParents walks the folders above rel one element at a time (see walk)
// and refuses a path that would fail at write time or that a non-root user
// could redirect between this check and the write:
//   - an element that exists and is not a folder (nor a symlink to one);
//   - a symlink not followed (see followLink), or one leading up past the
//     node root;
//   - a folder owned by a non-root user, or writable by other users (a
//     sticky folder such as /tmp is fine when the next element exists and
//     is root's: others cannot replace it there).
//
// The root mount itself is trusted. A missing element ends the walk: the
// daemon creates the rest as root. open reports whether rel's own folder
// lets other users add entries (sticky and writable by them).
func (b *batch) checkParents(rel string) (open bool, err error) {
	r, err := b.resolveParents(rel)
	return r.open, err
}

// resolveParents is checkParents, with the real path of rel's folder.
func (b *batch) resolveParents(rel string) (resolved, error) {
	dir := path.Dir(rel)
	if dir == "." {
		return resolved{real: "."}, nil
	}
	if r, ok := b.parents[dir]; ok {
		return r, nil
	}
	r, err := b.walk(dir, true)
	if err != nil {
		return resolved{}, err
	}
	if b.parents == nil {
		b.parents = map[string]resolved{}
	}
	b.parents[dir] = r
	return r, nil
}

// realDir returns the folder dir's path without symlinks (see walk), for
// opening it through the root: os.Root follows relative symlinks but
// refuses absolute ones, which on a node lead inside its root (Ignition
// resolves them relative to the root it writes). It checks only the
// symlinks it follows, not the folders: core's home, which core owns, is
// opened through it.
func (b *batch) realDir(dir string) (string, error) {
	if dir == "." {
		return dir, nil
	}
	if r, ok := b.reals[dir]; ok {
		return r, nil
	}
	r, err := b.walk(dir, false)
	if err != nil {
		return "", err
	}
	if b.reals == nil {
		b.reals = map[string]string{}
	}
	b.reals[dir] = r.real
	return r.real, nil
}

// walk resolves the folder dir one element at a time, following symlinks
// as the kernel would in a chroot to the node root, relative ones from
// their folder, absolute ones from the root, when followLink allows. With
// check set it also applies checkParents's rules to every folder.
func (b *batch) walk(dir string, check bool) (resolved, error) {
	todo := strings.Split(dir, "/")
	var real []string // the folders reached so far, without symlinks
	links := 0
	open := false
	for len(todo) > 0 {
		e := todo[0]
		todo = todo[1:]
		switch e {
		case "", ".":
			continue
		case "..":
			if len(real) == 0 {
				return resolved{}, fmt.Errorf("/%s leads up past the node root", dir)
			}
			real = real[:len(real)-1]
			if check {
				var err error
				if open, err = b.folderOpen(real); err != nil {
					return resolved{}, err
				}
			}
			continue
		}
		cur := path.Join(append(real, e)...)
		fi, err := b.f.root.Lstat(cur)
		if isNotExist(err) {
			if check && open {
				return resolved{}, fmt.Errorf("/%s is missing in a folder other users can write to", cur)
			}
			return missingRest(dir, append(real, e), todo, open)
		}
		if err != nil {
			return resolved{}, err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if check && open && st.Uid != 0 {
			return resolved{}, fmt.Errorf("/%s is owned by uid %d in a folder other users can write to", cur, st.Uid)
		}
		switch fi.Mode().Type() {
		case fs.ModeSymlink:
			if links++; links > maxLinks {
				return resolved{}, fmt.Errorf("/%s: too many levels of symlinks", dir)
			}
			target, err := b.followLink(real, cur, st, check)
			if err != nil {
				return resolved{}, err
			}
			if path.IsAbs(target) {
				real, open = nil, false
			}
			todo = append(strings.Split(target, "/"), todo...)
			continue
		case fs.ModeDir:
		default:
			return resolved{}, fmt.Errorf("/%s is not a folder", cur)
		}
		if check {
			if open, err = b.folderMode(cur, st); err != nil {
				return resolved{}, err
			}
		}
		real = append(real, e)
	}
	return resolved{real: joinReal(real), open: open}, nil
}

// missingRest ends a walk at a missing element: the rest of the path is
// created by the daemon, so it holds no symlink, and it must not climb back.
func missingRest(dir string, real, todo []string, open bool) (resolved, error) {
	for _, e := range todo {
		switch e {
		case "", ".":
		case "..":
			return resolved{}, fmt.Errorf("/%s: /%s is missing", dir, path.Join(real...))
		default:
			real = append(real, e)
		}
	}
	return resolved{real: joinReal(real), open: open}, nil
}

func joinReal(real []string) string {
	if len(real) == 0 {
		return "."
	}
	return path.Join(real...)
}

// followLink returns the target of the symlink cur (in the folder real)
// when the daemon may follow it: root owns the link, and no other user can
// replace it (its folder is root's and not writable by others but sticky;
// the root mount itself is trusted). With check set, the folder was
// checked on the way; else it is checked here.
func (b *batch) followLink(real []string, cur string, st *syscall.Stat_t, check bool) (string, error) {
	if st.Uid != 0 {
		return "", fmt.Errorf("/%s is a symlink owned by uid %d, not root: refusing to follow it", cur, st.Uid)
	}
	if !check {
		if _, err := b.folderOpen(real); err != nil {
			return "", fmt.Errorf("refusing to follow the symlink /%s: %w", cur, err)
		}
	}
	return b.f.root.Readlink(cur)
}

// folderOpen re-reads the folder real (already checked) for its mode.
func (b *batch) folderOpen(real []string) (bool, error) {
	if len(real) == 0 {
		return false, nil
	}
	cur := path.Join(real...)
	fi, err := b.f.root.Lstat(cur)
	if err != nil {
		return false, err
	}
	return b.folderMode(cur, fi.Sys().(*syscall.Stat_t))
}

// folderMode refuses a folder a non-root user can change, and reports
// whether other users may add entries to it (sticky and writable by them,
// through its mode bits or its ACL: see writers).
func (b *batch) folderMode(rel string, st *syscall.Stat_t) (open bool, err error) {
	if st.Uid != 0 {
		return false, fmt.Errorf("folder /%s is owned by uid %d, not root: that user could replace what is in it", rel, st.Uid)
	}
	who, err := b.writers(rel, st)
	if err != nil || who == "" {
		return false, err
	}
	if st.Mode&syscall.S_ISVTX == 0 {
		return false, fmt.Errorf("folder /%s is writable by other users (%s; mode %04o)", rel, who, st.Mode&0o7777)
	}
	return true, nil
}

// checkWrite refuses to write rel when its folders are unsafe (see
// checkParents) or when what is there cannot be replaced by a file: a
// folder, a special file, a symlink leading out of the root, or, in a
// folder others can write to, anything not root's or nothing at all.
// Renaming over an in-root symlink replaces the link, never its target.
func (b *batch) checkWrite(rel string) error {
	open, err := b.checkParents(rel)
	if err != nil {
		return err
	}
	if err := b.checkTarget(rel); err != nil {
		return err
	}
	return b.checkOpenTarget(rel, open)
}

// checkRemove refuses to remove rel when its folders are unsafe or when it
// is a folder. A symlink there is fine: it is removed (or replaced by the
// original) itself, never followed.
func (b *batch) checkRemove(rel string) error {
	open, err := b.checkParents(rel)
	if err != nil {
		return err
	}
	fi, err := b.lstat(rel)
	switch {
	case isNotExist(err):
		return nil // nothing to remove
	case err != nil:
		return err
	case fi.Mode().Type() == fs.ModeDir:
		return fmt.Errorf("/%s is a folder, not a file", rel)
	}
	return b.checkOpenTarget(rel, open)
}

// checkOpenTarget refuses rel in a folder other users can add entries to
// (sticky, like /tmp) unless it exists and is root's.
func (b *batch) checkOpenTarget(rel string, open bool) error {
	if !open {
		return nil
	}
	fi, err := b.lstat(rel)
	if isNotExist(err) {
		return fmt.Errorf("/%s is missing in a folder other users can write to", rel)
	}
	if err != nil {
		return err
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		return fmt.Errorf("/%s is owned by uid %d in a folder other users can write to", rel, uid)
	}
	return nil
}

// lstat is Lstat of rel through its folder's real path (see realDir); a
// missing folder is a missing rel.
func (b *batch) lstat(rel string) (fs.FileInfo, error) {
	d, err := b.dir(path.Dir(rel), false)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, &fs.PathError{Op: "lstat", Path: rel, Err: fs.ErrNotExist}
	}
	return d.Lstat(path.Base(rel))
}

// tempName is the temporary name under which name is written before its
// rename: short and of fixed length, so that it fits NAME_MAX (255 bytes)
// whatever the length of name, and distinct per name, so that files of one
// folder can be written side by side. The suffix marks it as the daemon's.
func tempName(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "." + hex.EncodeToString(sum[:8]) + tempSuffix
}

// tempSuffix ends every temporary name.
const tempSuffix = ".nodeconfd-tmp"

// chmodDir sets the mode of the folder rel through a handle opened without
// following a symlink, never by path.
func chmodDir(root *os.Root, rel string, mode fs.FileMode) error {
	parent, err := root.OpenRoot(path.Dir(rel))
	if err != nil {
		return err
	}
	defer parent.Close()
	fh, err := openNoFollow(parent, path.Base(rel))
	if err != nil {
		return err
	}
	err = fh.Chmod(mode)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}
