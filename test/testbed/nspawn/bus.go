package nspawn

import (
	"context"
	"fmt"
	"time"

	godbus "github.com/godbus/dbus/v5"
)

// pollInterval is how often the guest's state is asked while waiting on it.
const pollInterval = 200 * time.Millisecond

// DialBus opens an authenticated connection to the guest's system bus. As
// root on the host with no user namespace, EXTERNAL auth makes the caller
// root in the guest too. The caller closes the connection.
func DialBus(ctx context.Context, address string) (*godbus.Conn, error) {
	conn, err := godbus.Dial(address, godbus.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", address, err)
	}
	if err := conn.Auth(nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("authenticating to %s: %w", address, err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("saying hello to %s: %w", address, err)
	}
	return conn, nil
}

// Bus opens a connection to the node's system bus; see DialBus.
func (n *Node) Bus(ctx context.Context) (*godbus.Conn, error) {
	return DialBus(ctx, n.BusAddress)
}

// ManagerProperty reads a property of the guest's systemd manager
// (org.freedesktop.systemd1.Manager), e.g. "SystemState".
func (n *Node) ManagerProperty(ctx context.Context, name string) (godbus.Variant, error) {
	conn, err := n.Bus(ctx)
	if err != nil {
		return godbus.Variant{}, err
	}
	defer conn.Close()
	var v godbus.Variant
	err = conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1").
		CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, "org.freedesktop.systemd1.Manager", name).
		Store(&v)
	if err != nil {
		return godbus.Variant{}, fmt.Errorf("reading manager property %s of node %s: %w", name, n.Name, err)
	}
	return v, nil
}

// SystemState returns the guest manager's SystemState: "initializing",
// "starting", "running", "degraded", "stopping", ...
func (n *Node) SystemState(ctx context.Context) (string, error) {
	v, err := n.ManagerProperty(ctx, "SystemState")
	if err != nil {
		return "", err
	}
	s, ok := v.Value().(string)
	if !ok {
		return "", fmt.Errorf("reading SystemState of node %s: got %s, want a string", n.Name, v.Signature())
	}
	return s, nil
}

// WaitRunning polls the guest's bus until its manager is "running" or
// "degraded". Right after asking for a reboot the old boot may still answer
// "running": wait for the new boot with WaitBoot instead.
func (n *Node) WaitRunning(ctx context.Context) error {
	var last error
	for {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		state, err := n.SystemState(callCtx)
		cancel()
		if err == nil && (state == "running" || state == "degraded") {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("system state is %q", state)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for node %s to run: %w (last: %v)", n.Name, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}
