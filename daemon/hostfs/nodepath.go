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

// checkParents walks the folders above rel one element at a time, following
// in-root symlinks the way os.Root does at write time, and refuses a path
// that would fail at write time or that a non-root user could redirect
// between this check and the write:
//   - an element that exists and is not a folder (nor a symlink to one);
//   - a symlink leading out of the node root (absolute, or up past it);
//   - a folder owned by a non-root user, or writable by other users (a
//     sticky folder such as /tmp is fine when the next element exists and
//     is root's: others cannot replace it there).
//
// The root mount itself is trusted. A missing element ends the walk: the
// daemon creates the rest as root. open reports whether rel's own folder
// lets other users add entries (sticky and writable by them).
func (b *batch) checkParents(rel string) (open bool, err error) {
	dir := path.Dir(rel)
	if dir == "." {
		return false, nil
	}
	if open, ok := b.parents[dir]; ok {
		return open, nil
	}
	if open, err = b.walkParents(dir); err != nil {
		return false, err
	}
	if b.parents == nil {
		b.parents = map[string]bool{}
	}
	b.parents[dir] = open
	return open, nil
}

// walkParents is checkParents without the cache.
func (b *batch) walkParents(dir string) (open bool, err error) {
	todo := strings.Split(dir, "/")
	var real []string // the folders reached so far, without symlinks
	links := 0
	for len(todo) > 0 {
		e := todo[0]
		todo = todo[1:]
		switch e {
		case "", ".":
			continue
		case "..":
			if len(real) == 0 {
				return false, fmt.Errorf("/%s leads out of the node root", dir)
			}
			real = real[:len(real)-1]
			if open, err = b.folderOpen(real); err != nil {
				return false, err
			}
			continue
		}
		cur := path.Join(append(real, e)...)
		fi, err := b.f.root.Lstat(cur)
		if isNotExist(err) {
			if open {
				return false, fmt.Errorf("/%s is missing in a folder other users can write to", cur)
			}
			return false, nil
		}
		if err != nil {
			return false, err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if open && st.Uid != 0 {
			return false, fmt.Errorf("/%s is owned by uid %d in a folder other users can write to", cur, st.Uid)
		}
		switch fi.Mode().Type() {
		case fs.ModeSymlink:
			if links++; links > maxLinks {
				return false, fmt.Errorf("/%s: too many levels of symlinks", dir)
			}
			target, err := b.f.root.Readlink(cur)
			if err != nil {
				return false, err
			}
			if path.IsAbs(target) {
				return false, fmt.Errorf("/%s is a symlink to %s, which leads out of the node root", cur, target)
			}
			todo = append(strings.Split(target, "/"), todo...)
			continue
		case fs.ModeDir:
		default:
			return false, fmt.Errorf("/%s is not a folder", cur)
		}
		if open, err = folderMode(cur, st); err != nil {
			return false, err
		}
		real = append(real, e)
	}
	return open, nil
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
	return folderMode(cur, fi.Sys().(*syscall.Stat_t))
}

// folderMode refuses a folder a non-root user can change, and reports
// whether other users may add entries to it (sticky and writable).
func folderMode(rel string, st *syscall.Stat_t) (open bool, err error) {
	if st.Uid != 0 {
		return false, fmt.Errorf("folder /%s is owned by uid %d, not root: that user could replace what is in it", rel, st.Uid)
	}
	writable := st.Mode&0o002 != 0 || (st.Mode&0o020 != 0 && st.Gid != 0)
	if !writable {
		return false, nil
	}
	if st.Mode&syscall.S_ISVTX == 0 {
		return false, fmt.Errorf("folder /%s is writable by other users (mode %04o)", rel, st.Mode&0o7777)
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
	fi, err := b.f.root.Lstat(rel)
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
	fi, err := b.f.root.Lstat(rel)
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
