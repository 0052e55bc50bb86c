package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// DBus implements Systemd over a node's system bus. It holds go-systemd's connection pair (calls and
// job signals) plus one plain connection for logind, hostnamed and properties go-systemd lacks.
//
// The bus goes away while the node reboots. Each method first checks the connections and, when they
// were dropped, dials the bus again, so a DBus outlives the node's reboots; a call that was in flight
// when the bus went away fails and is not retried. It is safe for concurrent use.
type DBus struct {
	address string
	// dialing is held while (re)connecting, so only one dial runs at a time; it is a channel so that
	// waiting for it honours ctx.
	dialing chan struct{}

	mu     sync.Mutex
	sd     *sdbus.Conn
	bus    *dbus.Conn
	closed bool
}

// Dial connects to the system bus at address (a D-Bus address such as
// "unix:path=/run/dbus/system_bus_socket") with EXTERNAL authentication as the current uid.
func Dial(ctx context.Context, address string) (*DBus, error) {
	d := &DBus{address: address, dialing: make(chan struct{}, 1)}
	if _, _, err := d.conns(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// Close closes the bus connections; later calls fail.
func (d *DBus) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	d.drop()
}

// lost drops the connections after a call failed in transport (anything but
// a D-Bus error reply or the caller's context ending), so that the next call
// dials again instead of writing to a dead socket. It returns err.
func (d *DBus) lost(err error) error {
	if err == nil || isReply(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drop()
	return err
}

// drop closes the current connections; d.mu must be held.
func (d *DBus) drop() {
	if d.sd != nil {
		d.sd.Close()
		d.bus.Close()
		d.sd, d.bus = nil, nil
	}
}

// current returns the connections if they are still up.
func (d *DBus) current() (*sdbus.Conn, *dbus.Conn, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, nil, false, errors.New("systemd connection is closed")
	}
	if d.sd != nil && d.sd.Connected() && d.bus.Connected() {
		return d.sd, d.bus, true, nil
	}
	return nil, nil, false, nil
}

// conns returns live connections, dialing the bus again if it went away.
func (d *DBus) conns(ctx context.Context) (*sdbus.Conn, *dbus.Conn, error) {
	if sd, bus, ok, err := d.current(); ok || err != nil {
		return sd, bus, err
	}
	select {
	case d.dialing <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("connecting to %s: %w", d.address, ctx.Err())
	}
	defer func() { <-d.dialing }()
	if sd, bus, ok, err := d.current(); ok || err != nil {
		return sd, bus, err // another caller reconnected meanwhile
	}

	sd, bus, err := connect(ctx, d.address)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %s: %w", d.address, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		sd.Close()
		bus.Close()
		return nil, nil, errors.New("systemd connection is closed")
	}
	d.drop()
	d.sd, d.bus = sd, bus
	return sd, bus, nil
}

// connect opens go-systemd's connection pair and a plain connection to the bus at address. The D-Bus
// handshakes take no context, so every socket opened is closed when ctx ends before they finish.
func connect(ctx context.Context, address string) (*sdbus.Conn, *dbus.Conn, error) {
	var opened openConns
	stop := context.AfterFunc(ctx, opened.closeAll)
	dial := func() (*dbus.Conn, error) { return opened.dial(address) }

	sd, err := sdbus.NewConnection(dial)
	var bus *dbus.Conn
	if err == nil {
		bus, err = dial()
	}
	if !stop() {
		// ctx ended: closeAll has closed (or is closing) every socket.
		return nil, nil, ctx.Err()
	}
	if err != nil {
		opened.closeAll()
		return nil, nil, err
	}
	return sd, bus, nil
}

// openConns tracks the sockets opened by one connect so they can be closed together.
type openConns struct {
	mu     sync.Mutex
	conns  []*dbus.Conn
	closed bool
}

// dial opens an authenticated connection and says Hello to the bus.
func (o *openConns) dial(address string) (*dbus.Conn, error) {
	conn, err := dbus.Dial(address)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		conn.Close()
		return nil, errors.New("connect canceled")
	}
	o.conns = append(o.conns, conn)
	o.mu.Unlock()

	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		return nil, fmt.Errorf("authenticating: %w", err)
	}
	if err := conn.Hello(); err != nil {
		return nil, fmt.Errorf("saying hello: %w", err)
	}
	return conn, nil
}

func (o *openConns) closeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for _, c := range o.conns {
		c.Close()
	}
}
