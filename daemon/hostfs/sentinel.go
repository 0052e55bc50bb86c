package hostfs

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Sentinel reports whether the file at p, a reboot-required sentinel (as
// Debian's and Ubuntu's package tools write /run/reboot-required), is
// there, and when it was last written. It is read through the root: a
// link in its path that leaves the root is not followed, and the sentinel
// itself is not followed if it is a link.
func (f *FS) Sentinel(p string) (time.Time, bool, error) {
	r, err := rel(p)
	if err != nil {
		return time.Time{}, false, err
	}
	fi, err := f.root.Lstat(r)
	if isNotExist(err) || errors.Is(err, syscall.ENOTDIR) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("reading the reboot sentinel %s: %w", p, err)
	}
	return fi.ModTime(), true, nil
}

// RemoveSentinel removes the sentinel at p when it was written before t
// (the reboot that answered it was asked for at t); a newer one is a new
// request and stays. Only a regular file is removed.
func (f *FS) RemoveSentinel(p string, t time.Time) error {
	if err := f.writable("removing the reboot sentinel " + p); err != nil {
		return err
	}
	r, err := rel(p)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := f.root.Lstat(r)
	if isNotExist(err) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the reboot sentinel %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() || !fi.ModTime().Before(t) {
		return nil
	}
	if err := f.root.Remove(r); err != nil && !isNotExist(err) {
		return fmt.Errorf("removing the reboot sentinel %s: %w", p, err)
	}
	return nil
}
