// Package systemdtest is a recording fake of the daemon's systemd (the
// systemd.Systemd interface), for tests of other packages: it records every
// call in order, as systemctl would be told, and keeps enough state that
// queries see earlier calls.
package systemdtest

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nodeconfd/nodeconfd/daemon/systemd"
)

// Fake is an in-memory Systemd for tests. It records every call in order, as the systemctl command
// line it stands for ("daemon-reload", "enable a.service b.service", "reload crio.service",
// "reboot"), and keeps a little state so that queries see earlier calls: Enable, Disable, Mask and
// Unmask change IsEnabled; Start, Restart and Stop change IsActive; Reboot changes BootID.
// A call with a done ctx, or one given an error by SetError, changes nothing.
// The zero value is ready to use and safe for concurrent use.
type Fake struct {
	mu sync.Mutex
	// Calls holds every call so far. Read it only once the code under test is done calling, or
	// use CallLog.
	Calls []string

	errs        map[string]error
	enabled     map[string]string
	active      map[string]string
	systemState string
	boots       int
	noHostnamed bool
}

// SetHostnamed makes BootID answer as with hostnamed (true, the default) or
// without it: no hostnamed ID, only the start.
func (f *Fake) SetHostnamed(answers bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noHostnamed = !answers
}

// SetError makes calls fail with err (nil clears it). key is either a verb ("start", "enable",
// "daemon-reload", "boot-id", "reboot", ...), which fails every such call, or a verb and a unit
// ("start a.service"), which fails that verb for that unit only and takes precedence.
func (f *Fake) SetError(key string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = map[string]error{}
	}
	f.errs[key] = err
}

// SetEnabled sets what IsEnabled returns for unit; units never set are "disabled".
func (f *Fake) SetEnabled(unit, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setEnabled(unit, state)
}

// SetActive sets what IsActive returns for unit; units never set are "inactive".
func (f *Fake) SetActive(unit, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setActive(unit, state)
}

// SetSystemState sets what SystemState returns; it is "running" until set.
func (f *Fake) SetSystemState(state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.systemState = state
}

// CallLog returns a copy of Calls.
func (f *Fake) CallLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.Calls)
}

// record logs a call and returns the error it must fail with; f.mu must be held.
func (f *Fake) record(ctx context.Context, verb string, units ...string) error {
	f.Calls = append(f.Calls, strings.Join(append([]string{verb}, units...), " "))
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, u := range units {
		if err := f.errs[verb+" "+u]; err != nil {
			return err
		}
	}
	return f.errs[verb]
}

func (f *Fake) setEnabled(unit, state string) {
	if f.enabled == nil {
		f.enabled = map[string]string{}
	}
	f.enabled[unit] = state
}

func (f *Fake) setActive(unit, state string) {
	if f.active == nil {
		f.active = map[string]string{}
	}
	f.active[unit] = state
}

// DaemonReload records "daemon-reload".
func (f *Fake) DaemonReload(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.record(ctx, "daemon-reload")
}

// Enable records "enable UNIT..." and marks the units enabled.
func (f *Fake) Enable(ctx context.Context, units ...string) error {
	return f.unitFiles(ctx, "enable", "enabled", units)
}

// Disable records "disable UNIT..." and marks the units disabled.
func (f *Fake) Disable(ctx context.Context, units ...string) error {
	return f.unitFiles(ctx, "disable", "disabled", units)
}

// Mask records "mask UNIT..." and marks the units masked.
func (f *Fake) Mask(ctx context.Context, units ...string) error {
	return f.unitFiles(ctx, "mask", "masked", units)
}

// Unmask records "unmask UNIT..." and marks the units disabled.
func (f *Fake) Unmask(ctx context.Context, units ...string) error {
	return f.unitFiles(ctx, "unmask", "disabled", units)
}

func (f *Fake) unitFiles(ctx context.Context, verb, state string, units []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(ctx, verb, units...); err != nil {
		return err
	}
	for _, u := range units {
		f.setEnabled(u, state)
	}
	return nil
}

// Start records "start UNIT" and marks it active.
func (f *Fake) Start(ctx context.Context, unit string) error {
	return f.job(ctx, "start", unit, "active")
}

// Stop records "stop UNIT" and marks it inactive.
func (f *Fake) Stop(ctx context.Context, unit string) error {
	return f.job(ctx, "stop", unit, "inactive")
}

// Restart records "restart UNIT" and marks it active.
func (f *Fake) Restart(ctx context.Context, unit string) error {
	return f.job(ctx, "restart", unit, "active")
}

// Reload records "reload UNIT".
func (f *Fake) Reload(ctx context.Context, unit string) error {
	return f.job(ctx, "reload", unit, "")
}

func (f *Fake) job(ctx context.Context, verb, unit, state string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(ctx, verb, unit); err != nil {
		return err
	}
	if state != "" {
		f.setActive(unit, state)
	}
	return nil
}

// IsEnabled records "is-enabled UNIT".
func (f *Fake) IsEnabled(ctx context.Context, unit string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(ctx, "is-enabled", unit); err != nil {
		return "", err
	}
	if s, ok := f.enabled[unit]; ok {
		return s, nil
	}
	return "disabled", nil
}

// IsActive records "is-active UNIT".
func (f *Fake) IsActive(ctx context.Context, unit string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(ctx, "is-active", unit); err != nil {
		return "", err
	}
	if s, ok := f.active[unit]; ok {
		return s, nil
	}
	return "inactive", nil
}

// SystemState records "is-system-running".
func (f *Fake) SystemState(ctx context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(ctx, "is-system-running"); err != nil {
		return "", err
	}
	if f.systemState == "" {
		return "running", nil
	}
	return f.systemState, nil
}

// BootID records "boot-id" and returns "boot-N" (or "" after SetHostnamed(false)) and "tN", N
// being the number of Reboot calls so far.
func (f *Fake) BootID(ctx context.Context) (id, start string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(ctx, "boot-id"); err != nil {
		return "", "", err
	}
	if !f.noHostnamed {
		id = "boot-" + strconv.Itoa(f.boots)
	}
	return id, "t" + strconv.Itoa(f.boots), nil
}

// Reboot records "reboot" and starts a new boot: BootID changes.
func (f *Fake) Reboot(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(ctx, "reboot"); err != nil {
		return err
	}
	f.boots++
	return nil
}

// Close records "close".
func (f *Fake) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls = append(f.Calls, "close")
}

var _ systemd.Systemd = (*Fake)(nil)
