package systemd

import (
	"context"
	"fmt"
)

// Systemd manages units and the boot of one node. Every method honours ctx: it returns once ctx is
// done at the latest.
type Systemd interface {
	// DaemonReload is `systemctl daemon-reload`.
	DaemonReload(ctx context.Context) error
	// Enable is `systemctl --no-reload enable --force`: persistent (/etc), replacing conflicting
	// symlinks. Call DaemonReload afterwards for systemd to see the change.
	Enable(ctx context.Context, units ...string) error
	// Disable is `systemctl --no-reload disable`.
	Disable(ctx context.Context, units ...string) error
	// Mask is `systemctl --no-reload mask --force`. systemd refuses to mask a unit whose own file is
	// in /etc/systemd/system: remove that file first.
	Mask(ctx context.Context, units ...string) error
	// Unmask is `systemctl --no-reload unmask`.
	Unmask(ctx context.Context, units ...string) error
	// Start is `systemctl start`: it waits for the job and fails with a *JobError unless the job's
	// result is "done".
	Start(ctx context.Context, unit string) error
	// Stop is `systemctl stop`; it waits like Start.
	Stop(ctx context.Context, unit string) error
	// Restart is `systemctl restart`; it waits like Start.
	Restart(ctx context.Context, unit string) error
	// Reload is `systemctl reload`; it waits like Start.
	Reload(ctx context.Context, unit string) error
	// IsEnabled is `systemctl is-enabled`: the unit file state (enabled, disabled, masked, static,
	// ...), or "not-found" when no unit file has that name.
	IsEnabled(ctx context.Context, unit string) (string, error)
	// IsActive is `systemctl is-active`: the unit's ActiveState (active, inactive, failed, ...).
	IsActive(ctx context.Context, unit string) (string, error)
	// SystemState is `systemctl is-system-running`: running, degraded, starting, ...
	SystemState(ctx context.Context) (string, error)
	// BootID names the node's current boot: hostnamed's boot ID ("" when it cannot tell) and
	// when the node's systemd started (always). Each changes with every reboot and only then.
	BootID(ctx context.Context) (id, start string, err error)
	// Reboot is `systemctl reboot`, asked of logind without interactive authorization.
	Reboot(ctx context.Context) error
	// Close releases the connection; the value must not be used afterwards.
	Close()
}

// JobError is returned by the job methods (Start, Stop, Restart, Reload) when systemd finished the
// job with a result other than "done".
type JobError struct {
	Op     string // systemctl verb: start, stop, restart, reload
	Unit   string
	Result string // canceled, timeout, failed, dependency, skipped
}

func (e *JobError) Error() string {
	return fmt.Sprintf("%s %s: job finished with result %q", e.Op, e.Unit, e.Result)
}

var _ Systemd = (*DBus)(nil)
