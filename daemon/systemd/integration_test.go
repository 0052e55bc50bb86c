package systemd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/daemon/systemd"
	"github.com/nodeconfd/nodeconfd/test/testbed/nspawn"
)

// bootNode boots a systemd-nspawn test node and waits for its first boot to run.
func bootNode(t *testing.T, ctx context.Context, name string) *nspawn.Node {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("systemd-nspawn"); err != nil {
		t.Skip("needs systemd-nspawn")
	}
	image, err := nspawn.Image(ctx)
	if err != nil {
		t.Fatal(err)
	}
	console := &nspawn.Console{}
	n, err := nspawn.Start(ctx, nspawn.Options{Name: name, ImageDir: image, WorkDir: t.TempDir(), Log: console})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := n.Stop(ctx); err != nil {
			t.Errorf("stopping node: %v", err)
		}
		if t.Failed() {
			lines := strings.Split(console.String(), "\n")
			t.Logf("node console (tail):\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	begin := time.Now()
	if err := n.WaitBoot(ctx, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("node booted in %v", time.Since(begin).Round(time.Millisecond))
	return n
}

func writeUnit(t *testing.T, n *nspawn.Node, dir, name, content string) {
	t.Helper()
	path := filepath.Join(n.Root, dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantState(t *testing.T, what, got string, err error, want string) {
	t.Helper()
	if err != nil || got != want {
		t.Errorf("%s = %q (err %v), want %q", what, got, err, want)
	}
}

// TestAgainstNode drives a real systemd in a booted container through DBus: unit files, jobs,
// queries, a CRI-O reload, and a reboot the connection survives.
func TestAgainstNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	n := bootNode(t, ctx, "systemd-test")

	sd, err := systemd.Dial(ctx, n.BusAddress)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()

	const unit = "nodeconfd-test.service"
	state, err := sd.IsEnabled(ctx, unit)
	wantState(t, "IsEnabled before the unit file exists", state, err, "not-found")
	writeUnit(t, n, "etc/systemd/system", unit, `[Service]
ExecStart=/bin/sleep infinity
ExecReload=/bin/true
[Install]
WantedBy=multi-user.target
`)
	// A vendor unit, for masking: systemd refuses to mask a unit whose own file is in /etc.
	const vendor = "nodeconfd-vendor.service"
	writeUnit(t, n, "usr/lib/systemd/system", vendor, "[Service]\nType=oneshot\nExecStart=/bin/true\n")
	const failing = "nodeconfd-fails.service"
	writeUnit(t, n, "etc/systemd/system", failing, "[Service]\nType=oneshot\nExecStart=/bin/false\n")

	if err := sd.DaemonReload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sd.Enable(ctx, unit); err != nil {
		t.Fatal(err)
	}
	state, err = sd.IsEnabled(ctx, unit)
	wantState(t, "IsEnabled after Enable", state, err, "enabled")
	if err := sd.Start(ctx, unit); err != nil {
		t.Fatal(err)
	}
	state, err = sd.IsActive(ctx, unit)
	wantState(t, "IsActive after Start", state, err, "active")
	if err := sd.Restart(ctx, unit); err != nil {
		t.Error(err)
	}
	if err := sd.Reload(ctx, unit); err != nil {
		t.Error(err)
	}

	var jobErr *systemd.JobError
	if err := sd.Start(ctx, failing); !errors.As(err, &jobErr) || jobErr.Result != "failed" {
		t.Errorf("Start of a failing unit: err = %v, want a JobError with result failed", err)
	}
	state, err = sd.IsActive(ctx, failing)
	wantState(t, "IsActive of the failed unit", state, err, "failed")
	// The health gate's view: ActiveState, SubState, NRestarts.
	for _, tc := range []struct{ unit, want string }{
		{unit, "loaded active running 0"}, {failing, "loaded failed failed 0"}, {"nodeconfd-none.service", "not-found inactive dead 0"},
	} {
		st, err := sd.UnitState(ctx, tc.unit)
		if got := fmt.Sprintf("%s %s %s %d", st.LoadState, st.ActiveState, st.SubState, st.Restarts); err != nil || got != tc.want {
			t.Errorf("UnitState(%s) = %q, %v; want %q", tc.unit, got, err, tc.want)
		}
	}

	if err := sd.Mask(ctx, unit); err == nil {
		t.Errorf("Mask of a unit whose file is in /etc succeeded")
	}
	state, err = sd.IsEnabled(ctx, vendor)
	wantState(t, "IsEnabled of the vendor unit", state, err, "static")
	if err := sd.Mask(ctx, vendor); err != nil {
		t.Fatal(err)
	}
	state, err = sd.IsEnabled(ctx, vendor)
	wantState(t, "IsEnabled after Mask", state, err, "masked")
	if err := sd.DaemonReload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sd.Start(ctx, vendor); err == nil {
		t.Error("Start of a masked unit succeeded")
	}
	if err := sd.Unmask(ctx, vendor); err != nil {
		t.Fatal(err)
	}
	state, err = sd.IsEnabled(ctx, vendor)
	wantState(t, "IsEnabled after Unmask", state, err, "static")

	reloads, err := n.CRIOReloads()
	if err != nil {
		t.Fatal(err)
	}
	if err := sd.Reload(ctx, "crio.service"); err != nil {
		t.Fatal(err)
	}
	if got, err := n.CRIOReloads(); err != nil || got != reloads+1 {
		t.Errorf("CRIOReloads after Reload = %d (err %v), want %d", got, err, reloads+1)
	}

	if err := sd.Stop(ctx, unit); err != nil {
		t.Error(err)
	}
	state, err = sd.IsActive(ctx, unit)
	wantState(t, "IsActive after Stop", state, err, "inactive")
	state, err = sd.SystemState(ctx)
	if err != nil || (state != "running" && state != "degraded") {
		t.Errorf("SystemState = %q (err %v), want running or degraded", state, err)
	}

	testReboot(t, ctx, n, sd, unit)
}

// testReboot reboots the node through sd and checks that sd works again on the new boot.
func testReboot(t *testing.T, ctx context.Context, n *nspawn.Node, sd *systemd.DBus, enabledUnit string) {
	before, beforeStart, err := sd.BootID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, againStart, err := sd.BootID(ctx)
	if err != nil || again != before || againStart != beforeStart || beforeStart == "" {
		t.Errorf("BootID changed without a reboot: %q %q then %q %q (err %v)", before, beforeStart, again, againStart, err)
	}
	t.Logf("BootID before the reboot: %s, %s", before, beforeStart)

	begin := time.Now()
	if err := sd.Reboot(ctx); err != nil {
		t.Fatal(err)
	}
	// While the node is down, calls fail (or answer from the old boot) but never hang.
	for range 3 {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		callBegin := time.Now()
		_, err := sd.IsActive(callCtx, enabledUnit)
		cancel()
		if took := time.Since(callBegin); took > 3*time.Second {
			t.Errorf("IsActive during the reboot took %v (err %v)", took, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := n.WaitBoot(ctx, 2); err != nil {
		t.Fatal(err)
	}
	t.Logf("node rebooted in %v", time.Since(begin).Round(time.Millisecond))

	after, afterStart, err := sd.BootID(ctx)
	if err != nil {
		t.Fatalf("BootID after the reboot, on the same DBus: %v", err)
	}
	t.Logf("BootID after the reboot: %s, %s", after, afterStart)
	if (after != "" && after == before) || afterStart == beforeStart {
		t.Errorf("BootID did not change across the reboot: %s, %s", before, beforeStart)
	}
	state, err := sd.IsEnabled(ctx, enabledUnit)
	wantState(t, "IsEnabled after the reboot", state, err, "enabled")
	state, err = sd.IsActive(ctx, enabledUnit)
	wantState(t, "IsActive of the enabled unit after the reboot", state, err, "active")

	// A fresh Dial works too.
	fresh, err := systemd.Dial(ctx, n.BusAddress)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if id, start, err := fresh.BootID(ctx); err != nil || id != after || start != afterStart {
		t.Errorf("BootID on a fresh connection = %q %q (err %v), want %q %q", id, start, err, after, afterStart)
	}
}
