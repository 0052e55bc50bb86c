package corpus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// Setup applies a case's setup verbs to the node root at root, through an
// os.Root (a symlink a verb makes can never lead a later verb out of the
// node), and returns the Undo that puts back everything they changed. On
// error the verbs applied so far are undone. The verbs, one per line,
// paths relative to the node root:
//
//	mkdir PATH          (with its parents)
//	file PATH CONTENT   (0644; CONTENT may be a Go-quoted string)
//	symlink PATH TARGET (what was at PATH is removed until the undo)
//	chown PATH UID:GID  (the link itself for a symlink)
//	chmod PATH OCTAL
//	user NAME UID       (a passwd and a group entry, UID = GID)
//	acl PATH user|group:ID:PERMS  (a named entry added to the access ACL
//	                    of the mode bits, as setfacl -m; PERMS as "rwx")
func Setup(root string, verbs []string) (*Undo, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	u := &Undo{root: r}
	for _, v := range verbs {
		if err := u.apply(v); err != nil {
			uerr := u.Run()
			return nil, errors.Join(fmt.Errorf("setup %q: %w", v, err), uerr)
		}
	}
	return u, nil
}

// Undo holds what a Setup changed, as the prior state of each path.
type Undo struct {
	root  *os.Root
	saved []saved
	seen  map[string]bool
}

// saved is the state of one path before the setup first changed it.
type saved struct {
	rel      string
	exists   bool
	mode     fs.FileMode
	uid, gid int
	data     []byte
	target   string
	acl      []byte // the access ACL of a folder or file, nil for none
}

func (u *Undo) apply(line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	args := strings.Fields(rest)
	want := 2
	if verb == "mkdir" || verb == "file" {
		want = 1
	}
	if len(args) < want {
		return fmt.Errorf("too few arguments")
	}
	rel, err := relPath(args[0])
	if err != nil {
		return err
	}
	switch verb {
	case "mkdir":
		return u.mkdir(rel)
	case "file":
		content := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), args[0]))
		if q, err := strconv.Unquote(content); err == nil {
			content = q
		}
		if err := u.save(rel); err != nil {
			return err
		}
		return u.root.WriteFile(rel, []byte(content), 0o644)
	case "symlink":
		if err := u.moveAside(rel); err != nil {
			return err
		}
		return u.root.Symlink(args[1], rel)
	case "chown":
		uid, gid, ok := strings.Cut(args[1], ":")
		if !ok {
			return fmt.Errorf("want UID:GID, have %q", args[1])
		}
		ui, err1 := strconv.Atoi(uid)
		gi, err2 := strconv.Atoi(gid)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if err := u.save(rel); err != nil {
			return err
		}
		return u.root.Lchown(rel, ui, gi)
	case "chmod":
		m, err := strconv.ParseUint(args[1], 8, 32)
		if err != nil {
			return err
		}
		if err := u.save(rel); err != nil {
			return err
		}
		return u.root.Chmod(rel, fs.FileMode(m)&fs.ModePerm|unixBits(uint32(m)))
	case "user":
		return u.user(args[0], args[1])
	case "acl":
		if err := u.save(rel); err != nil {
			return err
		}
		return u.setACL(rel, args[1])
	}
	return fmt.Errorf("unknown verb %q", verb)
}

// relPath turns a node path (absolute or not) into one relative to the root.
func relPath(p string) (string, error) {
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	if rel == "" {
		return "", fmt.Errorf("path %q is the node's root", p)
	}
	return rel, nil
}

// unixBits maps setuid, setgid and sticky to their fs.FileMode bits.
func unixBits(m uint32) fs.FileMode {
	var b fs.FileMode
	if m&0o4000 != 0 {
		b |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		b |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		b |= fs.ModeSticky
	}
	return b
}

// mkdir makes rel and its missing parents; the first missing one is saved
// as absent, so the undo removes the whole new tree.
func (u *Undo) mkdir(rel string) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		if _, err := u.root.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			if err := u.save(p); err != nil {
				return err
			}
			break
		}
	}
	return u.root.MkdirAll(rel, 0o755)
}

// user adds a passwd and a group entry for name with uid as UID and GID.
func (u *Undo) user(name, uid string) error {
	if _, err := strconv.Atoi(uid); err != nil {
		return err
	}
	entries := map[string]string{
		"etc/passwd": fmt.Sprintf("%s:x:%s:%s::/home/%s:/usr/sbin/nologin\n", name, uid, uid, name),
		"etc/group":  fmt.Sprintf("%s:x:%s:\n", name, uid),
	}
	for _, rel := range []string{"etc/passwd", "etc/group"} {
		if err := u.save(rel); err != nil {
			return err
		}
		f, err := u.root.OpenFile(rel, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(entries[rel])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// moveAside makes room for a new entry at rel: what is there (a folder
// with its files, say) is saved whole, then removed; the undo puts it
// back. (A rename would not do: overlayfs refuses to rename a folder of
// its lower layer.)
func (u *Undo) moveAside(rel string) error {
	fi, err := u.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return u.save(rel)
	case err != nil:
		return err
	case !fi.IsDir():
		if err := u.save(rel); err != nil {
			return err
		}
		return u.root.Remove(rel)
	}
	var tree []string
	err = fs.WalkDir(u.root.FS(), rel, func(p string, _ fs.DirEntry, err error) error {
		tree = append(tree, p)
		return err
	})
	if err != nil {
		return err
	}
	// Children first in the undo list, so the undo, which runs it
	// backwards, makes each folder before what it holds.
	for i := len(tree) - 1; i >= 0; i-- {
		if err := u.save(tree[i]); err != nil {
			return err
		}
	}
	return u.root.RemoveAll(rel)
}

// save records the state of rel before its first change.
func (u *Undo) save(rel string) error {
	if u.seen == nil {
		u.seen = map[string]bool{}
	}
	if u.seen[rel] {
		return nil
	}
	s := saved{rel: rel}
	fi, err := u.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		st := fi.Sys().(*syscall.Stat_t)
		s.exists, s.mode, s.uid, s.gid = true, fi.Mode(), int(st.Uid), int(st.Gid)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if s.target, err = u.root.Readlink(rel); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if s.data, err = u.root.ReadFile(rel); err != nil {
				return err
			}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if s.acl, err = u.getACL(rel); err != nil {
				return err
			}
		}
	}
	u.seen[rel] = true
	u.saved = append(u.saved, s)
	return nil
}

// Run puts every saved path back as it was, the last change first, and
// closes the root.
func (u *Undo) Run() error {
	var errs []error
	for i := len(u.saved) - 1; i >= 0; i-- {
		errs = append(errs, u.restore(u.saved[i]))
	}
	u.saved, u.seen = nil, nil
	errs = append(errs, u.root.Close())
	return errors.Join(errs...)
}

func (u *Undo) restore(s saved) error {
	if !s.exists {
		if err := u.root.RemoveAll(s.rel); err != nil {
			return fmt.Errorf("undo: removing /%s: %w", s.rel, err)
		}
		return nil
	}
	fi, err := u.root.Lstat(s.rel)
	same := err == nil && fi.Mode().Type() == s.mode.Type()
	if !same {
		if err := u.root.RemoveAll(s.rel); err != nil {
			return fmt.Errorf("undo: removing /%s: %w", s.rel, err)
		}
	}
	switch {
	case s.mode&fs.ModeSymlink != 0:
		if same {
			if err := u.root.Remove(s.rel); err != nil {
				return err
			}
		}
		if err := u.root.Symlink(s.target, s.rel); err != nil {
			return err
		}
		return u.root.Lchown(s.rel, s.uid, s.gid)
	case s.mode.IsDir():
		if !same {
			if err := u.root.Mkdir(s.rel, 0o755); err != nil {
				return err
			}
		}
	case s.mode.IsRegular():
		if err := u.root.WriteFile(s.rel, s.data, s.mode.Perm()); err != nil {
			return err
		}
	}
	if err := u.root.Lchown(s.rel, s.uid, s.gid); err != nil {
		return err
	}
	if err := u.root.Chmod(s.rel, s.mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return err
	}
	return u.putACL(s.rel, s.acl)
}
