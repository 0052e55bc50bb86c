package hostfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Core's password hash is set as machine-config-daemon sets it with
// `usermod -p`: its /etc/shadow entry gets the hash and today as the date
// of the last change, the other entries are left byte for byte, under the
// lock the shadow tools take (lckpwdf). The file is written like any file
// of the update, journaled, so a rollback puts the old one back; no
// command runs, so no hash ever reaches a command line.

const (
	shadowRel = "etc/shadow"
	// pwdLockRel is the lock lckpwdf(3) takes for passwd and shadow.
	pwdLockRel = "etc/.pwd.lock"
	// pwdLockWait is how long lckpwdf waits for the lock.
	pwdLockWait = 15 * time.Second
)

// SetPasswordHash sets user core's password hash ("" sets "*", no
// password, as machine-config-daemon does); an equal hash is left alone.
func (t *Txn) SetPasswordHash(hash string) error {
	if hash == "" {
		hash = "*"
	}
	if msg := plan.CheckPasswordHash(hash); msg != "" {
		return errors.New(msg)
	}
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	unlock, err := lockPasswd(t.f.root)
	if err != nil {
		return err
	}
	defer unlock()
	fi, err := t.f.root.Lstat(shadowRel)
	if err != nil {
		return fmt.Errorf("reading /etc/shadow: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("/etc/shadow is a %v, not a regular file: refusing to write it", fi.Mode().Type())
	}
	data, err := t.f.root.ReadFile(shadowRel)
	if err != nil {
		return fmt.Errorf("reading /etc/shadow: %w", err)
	}
	out, err := SetShadowHash(data, "core", hash, time.Now().Unix()/86400)
	if err != nil || bytes.Equal(out, data) {
		return err
	}
	st := fi.Sys().(*syscall.Stat_t)
	uid, gid := int(st.Uid), int(st.Gid)
	file := plan.File{Path: "/" + shadowRel, Contents: out, Mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky),
		User: plan.Owner{ID: &uid}, Group: plan.Owner{ID: &gid}}
	b := t.f.newBatch()
	defer b.close()
	ts, err := b.targets([]plan.File{file})
	if err != nil {
		return err
	}
	return t.apply(b, ts, nil)
}

// SetShadowHash returns the shadow file data with user's hash set and its
// last change set to day (days since 1970), as usermod -p does; data
// unchanged when the hash is already set. It fails when user has no entry.
func SetShadowHash(data []byte, user, hash string, day int64) ([]byte, error) {
	lines := strings.SplitAfter(string(data), "\n")
	for i, line := range lines {
		body := strings.TrimSuffix(line, "\n")
		fields := strings.Split(body, ":")
		if fields[0] != user || len(fields) < 2 {
			continue
		}
		if fields[1] == hash {
			return data, nil
		}
		fields[1] = hash
		if len(fields) > 2 {
			fields[2] = strconv.FormatInt(day, 10)
		}
		lines[i] = strings.Join(fields, ":") + line[len(body):]
		return []byte(strings.Join(lines, "")), nil
	}
	return nil, fmt.Errorf("user %s has no entry in /etc/shadow", user)
}

// lockPasswd takes lckpwdf's lock: a write lock on /etc/.pwd.lock, waited
// for at most pwdLockWait. The returned function releases it.
func lockPasswd(root *os.Root) (func(), error) {
	fh, err := root.OpenFile(pwdLockRel, os.O_WRONLY|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening /%s: %w", pwdLockRel, err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	deadline := time.Now().Add(pwdLockWait)
	for {
		err = unix.FcntlFlock(fh.Fd(), unix.F_SETLK, &lk)
		if err == nil {
			return func() { fh.Close() }, nil // closing drops the lock
		}
		if (!errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES)) || time.Now().After(deadline) {
			fh.Close()
			return nil, fmt.Errorf("locking /%s (the passwd and shadow lock): %w", pwdLockRel, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
