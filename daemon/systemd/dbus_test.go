package systemd

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

// startBus runs a private dbus-daemon (no systemd behind it) listening at sock and returns its address
// and a stop function.
func startBus(t *testing.T, sock string) (string, func()) {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Skip("dbus-daemon not installed")
	}
	addr := "unix:path=" + sock
	// No service directories: nothing can be activated, so names nobody owns are ServiceUnknown.
	config := filepath.Join(filepath.Dir(sock), "bus.conf")
	err := os.WriteFile(config, []byte(`<busconfig>
  <type>session</type>
  <listen>`+addr+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dbus-daemon", "--config-file="+config, "--nofork", "--nopidfile")
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return addr, stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("dbus-daemon did not listen on %s", sock)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isServiceUnknown(err error) bool {
	var dbusErr dbus.Error
	return errors.As(err, &dbusErr) && dbusErr.Name == "org.freedesktop.DBus.Error.ServiceUnknown"
}

// TestDBusReconnects checks, against a real bus daemon that has no systemd, that calls fail cleanly
// while the bus is gone and that the same DBus works again once a bus is back at the address.
func TestDBusReconnects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sock := filepath.Join(t.TempDir(), "bus")
	addr, stop := startBus(t, sock)

	d, err := Dial(ctx, addr)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer d.Close()
	// The bus answers for systemd: nobody owns the name.
	if _, err := d.IsActive(ctx, "a.service"); !isServiceUnknown(err) {
		t.Fatalf("IsActive with no systemd: err = %v, want ServiceUnknown", err)
	}
	if err := d.Start(ctx, "a.service"); !isServiceUnknown(err) {
		t.Fatalf("Start with no systemd: err = %v, want ServiceUnknown", err)
	}

	stop()
	callCtx, callCancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = d.SystemState(callCtx)
	callCancel()
	if err == nil || isServiceUnknown(err) {
		t.Fatalf("SystemState with the bus gone: err = %v, want a connection error", err)
	}

	startBus(t, sock)
	if _, _, err := d.BootID(ctx); !isServiceUnknown(err) {
		t.Fatalf("BootID after the bus came back: err = %v, want ServiceUnknown (reconnected)", err)
	}
}

// TestDBusHonoursContext checks that a bus that accepts the connection but never answers cannot hold
// Dial past its context.
func TestDBusHonoursContext(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "silent")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Dial(ctx, "unix:path="+sock)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial to a silent bus: err = %v, want deadline exceeded", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Dial took %v past a 300ms deadline", took)
	}
}

func TestDialNoBus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, "unix:path="+filepath.Join(t.TempDir(), "none"))
	if err == nil || !strings.Contains(err.Error(), "connecting to") {
		t.Errorf("Dial with no bus: err = %v, want a connecting error", err)
	}
}

// serve claims name on the bus at addr and exports props at path, standing in for a service.
func serve(t *testing.T, addr, name string, path dbus.ObjectPath, props prop.Map) {
	t.Helper()
	conn := dialService(t, addr, name)
	if _, err := prop.Export(conn, path, props); err != nil {
		t.Fatal(err)
	}
	own(t, conn, name)
}

// dialService opens a connection to the bus at addr for the service name,
// closed when t ends.
func dialService(t *testing.T, addr, name string) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Dial(addr)
	if err == nil {
		err = conn.Auth(nil)
	}
	if err == nil {
		err = conn.Hello()
	}
	if err != nil {
		t.Fatalf("connecting %s: %v", name, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// own makes conn the owner of name.
func own(t *testing.T, conn *dbus.Conn, name string) {
	t.Helper()
	if reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("requesting %s: %v (reply %v)", name, err, reply)
	}
}

// TestBootID checks both forms of BootID against stand-in hostnamed and manager services.
func TestBootID(t *testing.T) {
	id := []byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xb}
	tests := []struct {
		name      string
		hostnamed prop.Map // nil: no hostnamed on the bus
		want      string
	}{
		{"hostnamed", prop.Map{"org.freedesktop.hostname1": {"BootID": {Value: id}}},
			"deadbeef000102030405060708090a0b"},
		{"hostnamed without BootID", prop.Map{"org.freedesktop.hostname1": {"Hostname": {Value: "n"}}}, ""},
		{"no hostnamed", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			addr, _ := startBus(t, filepath.Join(t.TempDir(), "bus"))
			serve(t, addr, managerDest, managerPath,
				prop.Map{managerIface: {"UserspaceTimestamp": {Value: uint64(1700000000123456)}}})
			if tt.hostnamed != nil {
				serve(t, addr, "org.freedesktop.hostname1", "/org/freedesktop/hostname1", tt.hostnamed)
			}
			d, err := Dial(ctx, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			id, start, err := d.BootID(ctx)
			if err != nil || id != tt.want || start != "t1700000000123456" {
				t.Errorf("BootID = %q, %q (err %v), want %q, t1700000000123456", id, start, err, tt.want)
			}
		})
	}
}

// slowProperties answers every property read only after a delay, as a
// hostnamed that D-Bus is slow to start.
type slowProperties struct{ delay time.Duration }

func (s slowProperties) Get(_, _ string) (dbus.Variant, *dbus.Error) {
	time.Sleep(s.delay)
	return dbus.MakeVariant([]byte{1}), nil
}

// A hostnamed slower than hostnamedTimeout leaves the ID out; the start,
// read first, is still had, so the read does not fail.
func TestBootIDSlowHostnamed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr, _ := startBus(t, filepath.Join(t.TempDir(), "bus"))
	serve(t, addr, managerDest, managerPath,
		prop.Map{managerIface: {"UserspaceTimestamp": {Value: uint64(1700000000123456)}}})
	conn := dialService(t, addr, "org.freedesktop.hostname1")
	if err := conn.Export(slowProperties{hostnamedTimeout + 3*time.Second}, "/org/freedesktop/hostname1",
		"org.freedesktop.DBus.Properties"); err != nil {
		t.Fatal(err)
	}
	own(t, conn, "org.freedesktop.hostname1")
	d, err := Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	id, start, err := d.BootID(ctx)
	if err != nil || id != "" || start != "t1700000000123456" {
		t.Errorf("BootID = %q, %q (err %v), want \"\", t1700000000123456", id, start, err)
	}
}
