package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"
)

// Sentinel reports whether the file at p, a reboot-required sentinel (as
// Debian's and Ubuntu's package tools write /run/reboot-required), is
// there, and when it was last written. Its folders get the checks a write
// gets (checkParents): a path a non-root user could redirect (a folder of
// theirs, one they may write to, a symlink they may replace) is refused,
// and in a folder others may add entries to (a sticky /tmp) only a
// sentinel root owns counts, so that no user can ask for a reboot or turn
// the removal to another file. It is read through the checked folder's
// handle; a symlink is not followed.
func (f *FS) Sentinel(p string) (time.Time, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, name, open, err := f.sentinelDir(p)
	if d == nil || err != nil {
		return time.Time{}, false, err
	}
	defer d.Close()
	fi, err := sentinelStat(d, name, open, p)
	if fi == nil || err != nil {
		return time.Time{}, false, err
	}
	return fi.ModTime(), true, nil
}

// RemoveSentinel removes the sentinel at p when it was written before t
// (the reboot that answered it was asked for at t); a newer one is a new
// request and stays. Only a regular file is removed, through the handle
// of its folder as Sentinel checked it.
func (f *FS) RemoveSentinel(p string, t time.Time) error {
	if err := f.writable("removing the reboot sentinel " + p); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, name, open, err := f.sentinelDir(p)
	if d == nil || err != nil {
		return err
	}
	defer d.Close()
	fi, err := sentinelStat(d, name, open, p)
	if fi == nil || err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Before(t) {
		return err
	}
	if err := d.Remove(name); err != nil && !isNotExist(err) {
		return fmt.Errorf("removing the reboot sentinel %s: %w", p, err)
	}
	return nil
}

// sentinelDir checks the folders of the sentinel p and opens its own (nil
// when a folder is missing); open says others may add entries to it.
// f.mu is held.
func (f *FS) sentinelDir(p string) (d *os.Root, name string, open bool, err error) {
	r, err := rel(p)
	if err != nil {
		return nil, "", false, err
	}
	b := f.newBatch()
	defer b.close()
	res, err := b.resolveParents(r)
	if err != nil {
		return nil, "", false, fmt.Errorf("the reboot sentinel %s: %w", p, err)
	}
	d, err = f.root.OpenRoot(res.real)
	if isNotExist(err) || errors.Is(err, syscall.ENOTDIR) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("opening the folder of the reboot sentinel %s: %w", p, err)
	}
	return d, path.Base(r), res.open, nil
}

// sentinelStat is the sentinel's own entry in its folder d, nil when it is
// not there. In a folder others may add entries to, one root does not own
// is refused.
func sentinelStat(d *os.Root, name string, open bool, p string) (fs.FileInfo, error) {
	fi, err := d.Lstat(name)
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the reboot sentinel %s: %w", p, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); open && (!ok || st.Uid != 0) {
		return nil, fmt.Errorf("the reboot sentinel %s is not root's, in a folder other users can write to", p)
	}
	return fi, nil
}
