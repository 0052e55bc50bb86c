package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// A user owns its home, so it can put anything at ~/.ssh between two steps
// of the daemon, e.g. a symlink to ../../etc: the SSH folder and key file
// are never reached through a symlink, and their owner and mode are set
// through open handles. The keys go to ~/.ssh/authorized_keys, the home
// from the node's /etc/passwd, for core and for any other user the node
// has: the daemon creates no users and no homes (docs/parity.md).

// sshUser is one user's SSH key paths, relative to the root, and account.
type sshUser struct {
	name            string
	acct            userEntry
	home, dir, keys string
}

// keysPath is the node path of the user's authorized_keys.
func (u sshUser) keysPath() string { return "/" + u.keys }

// sshUserOf looks up name in the node's accounts and places its key file:
// the home must be an absolute path outside the folders no file of a
// config may be written to (plan.CheckNodePath).
func (b *batch) sshUserOf(name string) (sshUser, error) {
	acct, err := b.user(name)
	if err != nil {
		return sshUser{}, err
	}
	if !path.IsAbs(acct.home) {
		return sshUser{}, fmt.Errorf("the home of user %s in the node's passwd, %q, is not an absolute path", name, acct.home)
	}
	clean := path.Clean(acct.home)
	if msg := plan.CheckNodePath(path.Join(clean, ".ssh", "authorized_keys")); msg != "" {
		return sshUser{}, fmt.Errorf("the SSH keys of user %s go under its home %s: %s", name, clean, msg)
	}
	home, err := rel(clean)
	if err != nil {
		return sshUser{}, fmt.Errorf("the home of user %s: %w", name, err)
	}
	return sshUser{name: name, acct: acct, home: home, dir: home + "/.ssh", keys: home + "/.ssh/authorized_keys"}, nil
}

// errNoHome says that a user's home is missing on the node.
var errNoHome = errors.New("does not exist on the node (the daemon creates no homes)")

// checkSSH refuses a user's SSH keys when the folders above its home are
// unsafe (see checkParents), when its home is missing, or when its home,
// ~/.ssh or the key file is a symlink, is not the right type, or is owned
// by another user than the user or root. A missing ~/.ssh or key file is
// fine: the daemon creates them.
func (b *batch) checkSSH(u sshUser) error {
	if _, err := b.checkParents(u.home); err != nil {
		return err
	}
	for _, c := range []struct {
		rel  string
		want fs.FileMode
	}{{u.home, fs.ModeDir}, {u.dir, fs.ModeDir}, {u.keys, 0}} {
		fi, err := b.lstat(c.rel)
		if isNotExist(err) && c.rel == u.home {
			return fmt.Errorf("/%s, the home of user %s, %w", u.home, u.name, errNoHome)
		}
		if isNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := checkSSHEntry(c.rel, fi, c.want, u); err != nil {
			return err
		}
	}
	return nil
}

// checkSSHEntry refuses a symlink, a wrong type or an owner other than the
// user and root.
func checkSSHEntry(rel string, fi fs.FileInfo, want fs.FileMode, u sshUser) error {
	switch t := fi.Mode().Type(); {
	case t == fs.ModeSymlink:
		return fmt.Errorf("/%s is a symlink: refusing to follow it for user %s's SSH keys", rel, u.name)
	case t != want:
		return fmt.Errorf("/%s is a %v, want a %v", rel, typeName(t), typeName(want))
	}
	if owner := int(fi.Sys().(*syscall.Stat_t).Uid); owner != 0 && owner != u.acct.uid {
		return fmt.Errorf("/%s is owned by uid %d, neither %s (%d) nor root", rel, owner, u.name, u.acct.uid)
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

// keysFile is the user's authorized_keys holding keys: 0600, the user's.
func (u sshUser) keysFile(keys []string) plan.File {
	var data []byte
	if len(keys) > 0 {
		data = []byte(strings.Join(keys, "\n") + "\n")
	}
	return plan.File{
		Path: u.keysPath(), Contents: data, Mode: 0o600,
		User: plan.Owner{ID: &u.acct.uid}, Group: plan.Owner{ID: &u.acct.gid},
	}
}

// WriteSSHKeys makes ~/.ssh/authorized_keys of user name hold keys (home
// from the node's /etc/passwd): the .ssh folder 0700 and the file 0600,
// both the user's. The folder's state before (absent, or its mode and
// owner) is journaled with the file, so Rollback puts both back. No keys
// remove the file as a file the config no longer has is removed (see
// removeFile): the original from before the daemon's first write comes
// back, if there was one; a user or home the node no longer has (or a home
// where the daemon never writes) has no key file to remove.
func (t *Txn) WriteSSHKeys(name string, keys []string) error {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	b := t.f.newBatch()
	defer b.close()
	u, err := b.sshUserOf(name)
	if len(keys) == 0 && err != nil {
		return nil // see preflightSSH
	}
	if err == nil {
		err = b.checkSSH(u)
	}
	if len(keys) == 0 && errors.Is(err, errNoHome) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing SSH keys: %w", err)
	}
	isSSHDir := func(fi fs.FileInfo) error { return checkSSHEntry(u.dir, fi, fs.ModeDir, u) }
	st, err := b.pinDir(u.dir, isSSHDir)
	if err != nil {
		return fmt.Errorf("writing SSH keys: %w", err)
	}
	if len(keys) == 0 {
		return t.removeSSHKeys(b, u, st)
	}
	ts, err := b.targets([]plan.File{u.keysFile(keys)})
	if err != nil {
		return err
	}
	if err := t.recordDir(u.dir, st); err != nil {
		return err
	}
	if err := t.record(b, []string{u.keysPath()}, 1); err != nil {
		return err
	}
	if err := b.makeSSHDir(u, isSSHDir); err != nil {
		return fmt.Errorf("writing SSH keys: %w", err)
	}
	ts[0].pinned = true
	return t.apply(b, ts, nil)
}

// removeSSHKeys removes the key file of u through its pinned ~/.ssh (st:
// its state, nil when missing, so there is no file), journaled first.
func (t *Txn) removeSSHKeys(b *batch, u sshUser, st *syscall.Stat_t) error {
	if st == nil {
		return nil
	}
	if err := t.recordDir(u.dir, st); err != nil {
		return err
	}
	if err := t.record(b, []string{u.keysPath()}, 0); err != nil {
		return err
	}
	if err := b.removeFile(u.keys); err != nil {
		return fmt.Errorf("removing the SSH keys of user %s: %w", u.name, err)
	}
	return nil
}

// makeSSHDir creates ~/.ssh when missing, then sets its owner (the user)
// and mode (0700) through a handle opened without following symlinks.
func (b *batch) makeSSHDir(u sshUser, ok func(fs.FileInfo) error) error {
	home, err := b.dir(u.home, false)
	if err != nil {
		return err
	}
	if home == nil {
		return fmt.Errorf("/%s, the home of user %s, %w", u.home, u.name, errNoHome)
	}
	if b.dirs[u.dir] == nil {
		if err := home.Mkdir(".ssh", 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		b.dirty[u.home] = true
		if _, err := b.pinDir(u.dir, ok); err != nil {
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
	} else if pinned, err := b.dirs[u.dir].Stat("."); err != nil || !os.SameFile(fi, pinned) {
		return fmt.Errorf("/%s changed while being written", u.dir)
	}
	if err := fh.Chown(u.acct.uid, u.acct.gid); err != nil {
		return err
	}
	return fh.Chmod(0o700)
}

// SSHKeysPath returns the node path of user name's authorized_keys, from
// its home in the node's /etc/passwd.
func (f *FS) SSHKeysPath(name string) (string, error) {
	b := f.newBatch()
	defer b.close()
	u, err := b.sshUserOf(name)
	return u.keysPath(), err
}

// CheckSSHKeys checks user name's authorized_keys: contents, mode 0600 and
// owner the user.
func (f *FS) CheckSSHKeys(name string, keys []string) error {
	b := f.newBatch()
	defer b.close()
	u, err := b.sshUserOf(name)
	if err == nil {
		err = b.checkSSH(u) // a symlinked ~/.ssh is not the user's keys
	}
	if err != nil {
		return fmt.Errorf("checking SSH keys of user %s: %w", name, err)
	}
	return b.checkFiles([]plan.File{u.keysFile(keys)}, true)
}
