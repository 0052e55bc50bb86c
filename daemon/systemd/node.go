package systemd

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/godbus/dbus/v5"
)

// SystemState is `systemctl is-system-running`.
func (d *DBus) SystemState(ctx context.Context) (string, error) {
	_, bus, err := d.conns(ctx)
	var state string
	if err == nil {
		state, err = getProperty[string](ctx, bus, managerDest, managerPath, managerIface, "SystemState")
		err = d.lost(err)
	}
	if err != nil {
		return "", fmt.Errorf("is-system-running: %w", err)
	}
	return state, nil
}

// BootID names the node's current boot two ways. id is hostnamed's BootID property (systemd 256
// and later) as 32 hex digits, like /proc/sys/kernel/random/boot_id without dashes, or "" when
// hostnamed cannot tell (older systemd, hostnamed missing or failing to start). start is "t"
// followed by the manager's UserspaceTimestamp in decimal microseconds: when the node's systemd
// started, which every read has. Both stay the same within a boot, so two reads always share a
// form to compare, even when hostnamed answered only one of them; id is the surer one across a
// boot (a node without a clock may start at the same time twice). The start is read first, and
// hostnamed, started on demand, gets at most hostnamedTimeout: a slow start of it leaves id out
// rather than failing the read.
func (d *DBus) BootID(ctx context.Context) (id, start string, err error) {
	_, bus, err := d.conns(ctx)
	if err != nil {
		return "", "", fmt.Errorf("reading boot ID: %w", err)
	}
	ts, err := getProperty[uint64](ctx, bus, managerDest, managerPath, managerIface, "UserspaceTimestamp")
	if err = d.lost(err); err != nil {
		return "", "", fmt.Errorf("reading boot ID: %w", err)
	}
	hctx, cancel := context.WithTimeout(ctx, hostnamedTimeout)
	defer cancel()
	raw, err := getProperty[[]byte](hctx, bus, "org.freedesktop.hostname1",
		"/org/freedesktop/hostname1", "org.freedesktop.hostname1", "BootID")
	// hostnamed's refusal (an error reply) or its slowness leaves id out; a lost connection or
	// the caller's end fails the read.
	slow := errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
	if err = d.lost(err); err != nil && !isReply(err) && !slow {
		return "", "", fmt.Errorf("reading boot ID: %w", err)
	}
	if err == nil {
		id = hex.EncodeToString(raw)
	}
	return id, "t" + strconv.FormatUint(ts, 10), nil
}

// hostnamedTimeout bounds BootID's wait for hostnamed, which D-Bus starts on demand.
const hostnamedTimeout = 2 * time.Second

// Reboot asks logind to reboot the node (org.freedesktop.login1.Manager.Reboot, not interactive).
// The call returns once logind has queued the reboot; the bus goes away soon after.
func (d *DBus) Reboot(ctx context.Context) error {
	_, bus, err := d.conns(ctx)
	if err == nil {
		err = bus.Object("org.freedesktop.login1", "/org/freedesktop/login1").
			CallWithContext(ctx, "org.freedesktop.login1.Manager.Reboot", 0, false).Store()
	}
	// The node's bus may go down before logind's reply gets out: a lost
	// reply is not a refusal. Only an error reply from logind is.
	var refused dbus.Error
	if err != nil && !errors.As(err, &refused) && !errors.Is(err, context.Canceled) && bus != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reboot: %w", err)
	}
	return nil
}

// getProperty reads one D-Bus property of type T.
func getProperty[T any](ctx context.Context, bus *dbus.Conn, dest string, path dbus.ObjectPath, iface, name string) (T, error) {
	var v dbus.Variant
	var zero T
	err := bus.Object(dest, path).
		CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, iface, name).Store(&v)
	if err != nil {
		return zero, fmt.Errorf("getting %s.%s: %w", iface, name, err)
	}
	t, ok := v.Value().(T)
	if !ok {
		return zero, fmt.Errorf("getting %s.%s: unexpected type %s", iface, name, v.Signature())
	}
	return t, nil
}

// isReply reports whether err is an error reply from the bus or a service,
// as opposed to a transport failure.
func isReply(err error) bool {
	var reply dbus.Error
	return errors.As(err, &reply)
}
