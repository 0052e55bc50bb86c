package fleet

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// host is a simulated node's filesystem, in memory: what the daemon writes
// is kept (across its restarts), checks compare against it, and a rollback
// restores what the journal saved. Safe for concurrent use.
type host struct {
	mu      sync.Mutex
	files   map[string][]byte
	state   map[string][]byte
	pending map[string]*txn
}

func newHost() *host {
	return &host{files: map[string][]byte{}, state: map[string][]byte{}, pending: map[string]*txn{}}
}

var _ phases.Host = (*host)(nil)

func (h *host) BeginTxn(id string) (phases.Txn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.pending[id]; ok {
		return t, nil
	}
	t := &txn{h: h, id: id, saved: map[string][]byte{}}
	h.pending[id] = t
	return t, nil
}

func (h *host) PendingTxns() ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(maps.Keys(h.pending)), nil
}

func (h *host) CheckFile(f plan.File) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	got, ok := h.files[f.Path]
	switch {
	case !ok:
		return fmt.Errorf("%s: missing", f.Path)
	case f.Digest == nil && !bytes.Equal(got, f.Contents):
		return fmt.Errorf("%s: contents differ", f.Path)
	}
	return nil
}

func (h *host) CheckUnit(u plan.Unit) error {
	if u.Contents == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if string(h.files[unitPath(u.Name)]) != *u.Contents {
		return fmt.Errorf("unit %s: contents differ", u.Name)
	}
	return nil
}

func (h *host) CheckSSHKeys(user string, keys []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if string(h.files[sshPath(user)]) != strings.Join(keys, "\n") {
		return fmt.Errorf("%s: keys differ", sshPath(user))
	}
	return nil
}

func (h *host) Preflight(_, _ plan.Config, _ plan.Diff) error { return nil }

func (h *host) WriteState(name string, data []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state[name] = bytes.Clone(data)
	return nil
}

func (h *host) ReadState(name string) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.state[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return bytes.Clone(d), nil
}

// sshPath stands for a user's authorized_keys.
func sshPath(user string) string { return "/home/" + user + "/.ssh/authorized_keys" }

// shadowPath stands for core's entry in /etc/shadow.
const shadowPath = "/etc/shadow:core"

func unitPath(name string) string { return "/etc/systemd/system/" + name }

// txn journals what it replaces (nil: the path did not exist), so that a
// rollback puts it back.
type txn struct {
	h     *host
	id    string
	saved map[string][]byte
	units map[string]string
}

// put writes path (nil contents: removes it), saving the original once;
// h.mu is held.
func (t *txn) put(path string, contents []byte) {
	if _, ok := t.saved[path]; !ok {
		if old, ok := t.h.files[path]; ok {
			t.saved[path] = old
		} else {
			t.saved[path] = nil
		}
	}
	if contents == nil {
		delete(t.h.files, path)
		return
	}
	t.h.files[path] = bytes.Clone(contents)
}

func (t *txn) locked(f func()) error {
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	f()
	return nil
}

func (t *txn) WriteFiles(files []plan.File) error {
	return t.locked(func() {
		for _, f := range files {
			t.put(f.Path, f.Contents)
		}
	})
}

func (t *txn) RemoveFile(path string) error { return t.locked(func() { t.put(path, nil) }) }

func (t *txn) WriteUnit(u plan.Unit) error {
	if u.Contents == nil {
		return nil
	}
	return t.locked(func() { t.put(unitPath(u.Name), []byte(*u.Contents)) })
}

func (t *txn) RemoveUnit(u plan.Unit) error { return t.locked(func() { t.put(unitPath(u.Name), nil) }) }

func (t *txn) WriteSSHKeys(user string, keys []string) error {
	return t.locked(func() { t.put(sshPath(user), []byte(strings.Join(keys, "\n"))) })
}

func (t *txn) SetPasswordHash(hash string) error {
	return t.locked(func() { t.put(shadowPath, []byte(hash)) })
}

func (t *txn) RecordUnitStates(states map[string]string) error {
	return t.locked(func() {
		if t.units == nil {
			t.units = map[string]string{}
		}
		for n, s := range states {
			if _, ok := t.units[n]; !ok {
				t.units[n] = s
			}
		}
	})
}

func (t *txn) Journaled() (int, []string) {
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	return len(t.saved), slices.Sorted(maps.Keys(t.units))
}

// CreatedDirs: the simulated host has no folders.
func (t *txn) CreatedDirs() []string { return nil }

func (t *txn) RemoveEmptyDirs([]string) (int, error) { return 0, nil }

func (t *txn) Rollback() error {
	return t.locked(func() {
		for p, old := range t.saved {
			if old == nil {
				delete(t.h.files, p)
			} else {
				t.h.files[p] = old
			}
		}
		delete(t.h.pending, t.id)
	})
}

func (t *txn) Commit() error { return t.locked(func() { delete(t.h.pending, t.id) }) }

// units is the node's systemd: the recording fake, whose Reboot also
// tells the node's supervisor, which then restarts the daemon as a reboot
// would.
type units struct {
	*systemdtest.Fake
	rebooted func()
}

func (u units) Reboot(ctx context.Context) error {
	if err := u.Fake.Reboot(ctx); err != nil {
		return err
	}
	u.rebooted()
	return nil
}
