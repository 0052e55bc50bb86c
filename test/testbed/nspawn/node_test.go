package nspawn

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// startNode boots a node and waits until its first boot is running.
func startNode(t *testing.T, ctx context.Context, opts Options) *Node {
	t.Helper()
	begin := time.Now()
	n := newNode(t, ctx, opts)
	if err := n.WaitBoot(ctx, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s: boot to running took %v", n.Name, time.Since(begin).Round(time.Millisecond))
	return n
}

// newNode starts a node and registers its Stop and teardown checks.
func newNode(t *testing.T, ctx context.Context, opts Options) *Node {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("systemd-nspawn"); err != nil {
		t.Skip("needs systemd-nspawn")
	}
	image, err := Image(ctx)
	if err != nil {
		t.Fatal(err)
	}
	log := &Console{}
	opts.ImageDir, opts.WorkDir, opts.Log = image, t.TempDir(), log
	n, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := n.Stop(ctx); err != nil {
			t.Errorf("stopping node %s: %v", n.Name, err)
		}
		assertGone(t, n)
		if t.Failed() || os.Getenv("NSPAWN_TEST_CONSOLE") != "" {
			t.Logf("console of %s:\n%s", n.Name, lastLines(log.String(), 300))
		}
	})
	return n
}

// assertGone checks that a stopped node left no process, mount or cgroup.
func assertGone(t *testing.T, n *Node) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte("--machine="+n.machine+"\x00")) {
			t.Errorf("process %s of node %s still runs: %q", p, n.Name, b)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), " "+n.Root+" ") {
		t.Errorf("root %s of node %s is still mounted", n.Root, n.Name)
	}
	for _, root := range append([]string{n.cg.v2}, n.cg.other...) {
		if dir := filepath.Join(root, n.cg.rel); exists(dir) {
			t.Errorf("cgroup %s of node %s is still there", dir, n.Name)
		}
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// systemd connects go-systemd to the node's bus.
func systemd(t *testing.T, ctx context.Context, n *Node) *sddbus.Conn {
	t.Helper()
	conn, err := sddbus.NewConnection(func() (*godbus.Conn, error) { return n.Bus(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func TestBootsToRunning(t *testing.T) {
	ctx := testContext(t)
	n := startNode(t, ctx, Options{Name: "boot-test"})
	if err := n.WaitRunning(ctx); err != nil {
		t.Fatal(err)
	}
	// "degraded" would mean a unit failed: the image masks those that fail
	// in a container.
	if state, err := n.SystemState(ctx); err != nil || state != "running" {
		failed, _ := systemd(t, ctx, n).ListUnitsFilteredContext(ctx, []string{"failed"})
		t.Errorf("system state %q (%v), want running; failed units: %+v", state, err, failed)
	}
	if got := n.Boots(); got != 1 {
		t.Errorf("Boots() = %d, want 1", got)
	}
	conn, err := n.Bus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	host, err := conn.Object("org.freedesktop.hostname1", "/org/freedesktop/hostname1").
		GetProperty("org.freedesktop.hostname1.Hostname")
	if err != nil {
		t.Fatal(err)
	}
	if host.Value() != n.Name {
		t.Errorf("guest host name = %v, want %s", host.Value(), n.Name)
	}
	for _, unit := range []string{"crio.service", "kubelet.service"} {
		out, err := n.Exec(ctx, "systemctl", "is-active", unit)
		if got := strings.TrimSpace(string(out)); err != nil || got != "active" {
			t.Errorf("%s is %q (%v), want active", unit, got, err)
		}
	}
	if out, err := n.Exec(ctx, "id", "core"); err != nil || !strings.Contains(string(out), "nodeconf-a") {
		t.Errorf("id core = %q (%v), want user core in group nodeconf-a", out, err)
	}
}

func TestUnitFileStartedOverDBus(t *testing.T) {
	ctx := testContext(t)
	n := startNode(t, ctx, Options{Name: "unit-test"})
	unit := "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'echo hello >/var/lib/hello'\n"
	if err := os.WriteFile(filepath.Join(n.Root, "etc/systemd/system/hello.service"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	sd := systemd(t, ctx, n)
	if err := sd.ReloadContext(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	if _, err := sd.StartUnitContext(ctx, "hello.service", "replace", done); err != nil {
		t.Fatal(err)
	}
	if result := <-done; result != "done" {
		t.Fatalf("starting hello.service: job result %q", result)
	}
	b, err := os.ReadFile(filepath.Join(n.Root, "var/lib/hello"))
	if err != nil || string(b) != "hello\n" {
		t.Errorf("hello.service wrote %q (%v), want hello", b, err)
	}
}

func TestCRIOReloadIsCounted(t *testing.T) {
	ctx := testContext(t)
	n := startNode(t, ctx, Options{Name: "reload-test"})
	before, err := n.CRIOReloads()
	if err != nil {
		t.Fatal(err)
	}
	sd := systemd(t, ctx, n)
	done := make(chan string, 1)
	if _, err := sd.ReloadUnitContext(ctx, "crio.service", "replace", done); err != nil {
		t.Fatal(err)
	}
	if result := <-done; result != "done" {
		t.Fatalf("reloading crio.service: job result %q", result)
	}
	if after, err := n.CRIOReloads(); err != nil || after != before+1 {
		t.Errorf("CRIOReloads() = %d (%v), want %d", after, err, before+1)
	}
	if k, err := n.KubeletReloads(); err != nil || k != 0 {
		t.Errorf("KubeletReloads() = %d (%v), want 0", k, err)
	}
}

func TestRebootOverLogind(t *testing.T) {
	ctx := testContext(t)
	var downs, runs atomic.Int32
	n := startNode(t, ctx, Options{
		Name:      "reboot-test",
		OnDown:    func() { downs.Add(1) },
		OnRunning: func() { runs.Add(1) },
	})
	marker := filepath.Join(n.Root, "var/lib/before-reboot")
	if err := os.WriteFile(marker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	stamp1 := userspaceTimestamp(t, ctx, n)
	bootID1, err := n.BootID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hostname1 BootID on boot 1: %s", hostnameBootID(ctx, n))

	begin := time.Now()
	callLogind(t, ctx, n, "Reboot")
	if err := n.WaitBoot(ctx, 2); err != nil {
		t.Fatal(err)
	}
	t.Logf("reboot to running took %v", time.Since(begin).Round(time.Millisecond))

	if got := n.Boots(); got != 2 {
		t.Errorf("Boots() = %d, want 2", got)
	}
	if d, r := downs.Load(), runs.Load(); d != 1 || r != 2 {
		t.Errorf("OnDown called %d times, OnRunning %d times; want 1 and 2", d, r)
	}
	if stamp2 := userspaceTimestamp(t, ctx, n); stamp2 == stamp1 {
		t.Errorf("UserspaceTimestamp did not change across the reboot: %d", stamp1)
	}
	bootID2, err := n.BootID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bootID2 == bootID1 {
		t.Errorf("guest boot_id did not change across the reboot: %s", bootID1)
	}
	t.Logf("guest boot_id %s -> %s; hostname1 BootID on boot 2: %s", bootID1, bootID2, hostnameBootID(ctx, n))
	if !exists(marker) {
		t.Errorf("%s did not survive the reboot", marker)
	}
}

// callLogind calls org.freedesktop.login1.Manager.<method>(false), e.g.
// Reboot. The guest may go down before its reply gets out: a lost reply is
// fine, an error reply is not.
func callLogind(t *testing.T, ctx context.Context, n *Node, method string) {
	t.Helper()
	conn, err := n.Bus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Object("org.freedesktop.login1", "/org/freedesktop/login1").
		CallWithContext(ctx, "org.freedesktop.login1.Manager."+method, 0, false).Err
	var reply godbus.Error
	if errors.As(err, &reply) {
		t.Fatalf("calling logind %s: %v", method, err)
	}
	if err != nil {
		t.Logf("calling logind %s: reply lost as the guest went down: %v", method, err)
	}
}

func userspaceTimestamp(t *testing.T, ctx context.Context, n *Node) uint64 {
	t.Helper()
	v, err := n.ManagerProperty(ctx, "UserspaceTimestamp")
	if err != nil {
		t.Fatal(err)
	}
	return v.Value().(uint64)
}

// hostnameBootID reads hostname1's BootID property, or says why it can't.
func hostnameBootID(ctx context.Context, n *Node) string {
	conn, err := n.Bus(ctx)
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	v, err := conn.Object("org.freedesktop.hostname1", "/org/freedesktop/hostname1").
		GetProperty("org.freedesktop.hostname1.BootID")
	if err != nil {
		return "unavailable: " + err.Error()
	}
	return v.String()
}

func TestTwoNodesAtOnce(t *testing.T) {
	ctx := testContext(t)
	begin := time.Now()
	a := newNode(t, ctx, Options{Name: "pair-a"})
	b := newNode(t, ctx, Options{Name: "pair-b"})
	nodes := []*Node{a, b}
	for _, n := range nodes {
		if err := n.WaitBoot(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("two nodes booted side by side in %v", time.Since(begin).Round(time.Millisecond))
	if a.cg.dir() == b.cg.dir() {
		t.Errorf("both nodes share cgroup %s", a.cg.dir())
	}
	cgroupOf := func(n *Node) string {
		leader, err := n.Leader()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(leader), "cgroup"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ca, cb := cgroupOf(a), cgroupOf(b)
	if !strings.Contains(ca, a.cg.rel+"/payload") || !strings.Contains(cb, b.cg.rel+"/payload") {
		t.Errorf("guest PID 1s are not in their node's payload cgroup:\n%s\n%s", ca, cb)
	}
	for _, n := range nodes {
		if state, err := n.SystemState(ctx); err != nil || (state != "running" && state != "degraded") {
			t.Errorf("node %s: state %q (%v)", n.Name, state, err)
		}
	}
}

func TestStopKillsHungGuest(t *testing.T) {
	ctx := testContext(t)
	n := startNode(t, ctx, Options{Name: "hung-test"})
	// A frozen guest ignores nspawn's request to halt.
	freeze := filepath.Join(n.cg.dir(), "payload", "cgroup.freeze")
	if err := os.WriteFile(freeze, []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	begin := time.Now()
	if err := n.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopping a hung guest took %v", time.Since(begin).Round(time.Millisecond))
	assertGone(t, n)
}

func TestStopRightAfterStartAndTwice(t *testing.T) {
	ctx := testContext(t)
	n := newNode(t, ctx, Options{Name: "quick-stop"})
	begin := time.Now()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stop during boot took %v", time.Since(begin).Round(time.Millisecond))
	if err := n.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	assertGone(t, n)
}

func TestGuestPowerOffEndsNode(t *testing.T) {
	ctx := testContext(t)
	var downs atomic.Int32
	n := startNode(t, ctx, Options{Name: "poweroff-test", OnDown: func() { downs.Add(1) }})
	callLogind(t, ctx, n, "PowerOff")
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.WaitBoot(waitCtx, 2); err == nil || waitCtx.Err() != nil {
		t.Fatalf("WaitBoot(2) after a power-off: %v, want a node-is-down error", err)
	}
	if got, d := n.Boots(), downs.Load(); got != 1 || d != 1 {
		t.Errorf("Boots() = %d, OnDown called %d times; want 1 and 1", got, d)
	}
}
