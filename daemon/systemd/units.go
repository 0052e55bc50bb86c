package systemd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

const (
	managerDest  = "org.freedesktop.systemd1"
	managerPath  = dbus.ObjectPath("/org/freedesktop/systemd1")
	managerIface = "org.freedesktop.systemd1.Manager"
)

// DaemonReload is `systemctl daemon-reload`.
func (d *DBus) DaemonReload(ctx context.Context) error {
	sd, _, err := d.conns(ctx)
	if err == nil {
		err = d.lost(sd.ReloadContext(ctx))
	}
	if err != nil {
		return fmt.Errorf("daemon-reload: %w", err)
	}
	return nil
}

// Enable is `systemctl --no-reload enable --force`.
func (d *DBus) Enable(ctx context.Context, units ...string) error {
	return d.unitFiles(ctx, "enable", units, func(sd *sdbus.Conn) error {
		_, _, err := sd.EnableUnitFilesContext(ctx, units, false, true)
		return err
	})
}

// Disable is `systemctl --no-reload disable`.
func (d *DBus) Disable(ctx context.Context, units ...string) error {
	return d.unitFiles(ctx, "disable", units, func(sd *sdbus.Conn) error {
		_, err := sd.DisableUnitFilesContext(ctx, units, false)
		return err
	})
}

// Mask is `systemctl --no-reload mask --force`.
func (d *DBus) Mask(ctx context.Context, units ...string) error {
	return d.unitFiles(ctx, "mask", units, func(sd *sdbus.Conn) error {
		_, err := sd.MaskUnitFilesContext(ctx, units, false, true)
		return err
	})
}

// Unmask is `systemctl --no-reload unmask`.
func (d *DBus) Unmask(ctx context.Context, units ...string) error {
	return d.unitFiles(ctx, "unmask", units, func(sd *sdbus.Conn) error {
		_, err := sd.UnmaskUnitFilesContext(ctx, units, false)
		return err
	})
}

func (d *DBus) unitFiles(ctx context.Context, op string, units []string, call func(*sdbus.Conn) error) error {
	if len(units) == 0 {
		return nil
	}
	sd, _, err := d.conns(ctx)
	if err == nil {
		err = d.lost(call(sd))
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, strings.Join(units, " "), err)
	}
	return nil
}

// Start is `systemctl start`.
func (d *DBus) Start(ctx context.Context, unit string) error {
	return d.job(ctx, "start", unit, (*sdbus.Conn).StartUnitContext)
}

// Stop is `systemctl stop`.
func (d *DBus) Stop(ctx context.Context, unit string) error {
	return d.job(ctx, "stop", unit, (*sdbus.Conn).StopUnitContext)
}

// Restart is `systemctl restart`.
func (d *DBus) Restart(ctx context.Context, unit string) error {
	return d.job(ctx, "restart", unit, (*sdbus.Conn).RestartUnitContext)
}

// Reload is `systemctl reload`.
func (d *DBus) Reload(ctx context.Context, unit string) error {
	return d.job(ctx, "reload", unit, (*sdbus.Conn).ReloadUnitContext)
}

type jobFunc func(sd *sdbus.Conn, ctx context.Context, unit, mode string, ch chan<- string) (int, error)

// jobPoll is how often a job wait checks that the bus is still there: a job's result arrives as a
// signal, which never comes once the connection is gone.
const jobPoll = time.Second

// job queues a job in "replace" mode and waits for its result.
func (d *DBus) job(ctx context.Context, op, unit string, enqueue jobFunc) error {
	sd, _, err := d.conns(ctx)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, unit, err)
	}
	// Buffered: go-systemd delivers the result under a lock shared by all jobs, and nobody may be
	// reading any more once ctx is done.
	result := make(chan string, 1)
	if _, err := enqueue(sd, ctx, unit, "replace", result); d.lost(err) != nil {
		return fmt.Errorf("%s %s: %w", op, unit, err)
	}
	tick := time.NewTicker(jobPoll)
	defer tick.Stop()
	for {
		select {
		case r := <-result:
			if r != "done" {
				return &JobError{Op: op, Unit: unit, Result: r}
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%s %s: waiting for the job: %w", op, unit, ctx.Err())
		case <-tick.C:
			if !sd.Connected() {
				return fmt.Errorf("%s %s: bus connection lost while waiting for the job", op, unit)
			}
		}
	}
}

// IsEnabled is `systemctl is-enabled`: the manager's GetUnitFileState, read from disk, so it needs no
// daemon-reload; "not-found" when there is no such unit file.
func (d *DBus) IsEnabled(ctx context.Context, unit string) (string, error) {
	_, bus, err := d.conns(ctx)
	var state string
	if err == nil {
		err = bus.Object(managerDest, managerPath).
			CallWithContext(ctx, managerIface+".GetUnitFileState", 0, unit).Store(&state)
		err = d.lost(err)
	}
	var dbusErr dbus.Error
	if errors.As(err, &dbusErr) && dbusErr.Name == "org.freedesktop.DBus.Error.FileNotFound" {
		return "not-found", nil
	}
	if err != nil {
		return "", fmt.Errorf("is-enabled %s: %w", unit, err)
	}
	return state, nil
}

// IsActive is `systemctl is-active`: the unit's ActiveState ("inactive" for units systemd does not
// know, as with systemctl).
func (d *DBus) IsActive(ctx context.Context, unit string) (string, error) {
	sd, _, err := d.conns(ctx)
	var prop *sdbus.Property
	if err == nil {
		prop, err = sd.GetUnitPropertyContext(ctx, unit, "ActiveState")
		err = d.lost(err)
	}
	if err != nil {
		return "", fmt.Errorf("is-active %s: %w", unit, err)
	}
	state, ok := prop.Value.Value().(string)
	if !ok {
		return "", fmt.Errorf("is-active %s: ActiveState is %s, not a string", unit, prop.Value.Signature())
	}
	return state, nil
}
