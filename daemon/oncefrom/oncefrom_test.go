package oncefrom

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

type testHost struct{ daemon.Host }

func (h testHost) RemoveState(name string) error { return h.FS.RemoveState(name) }

func config(name, ign string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(ign)}}}
}

func files(fs ...string) string {
	return `{"ignition":{"version":"3.4.0"},"storage":{"files":[` + strings.Join(fs, ",") + `]}}`
}

func file(path, data string) string {
	return `{"path":"` + path + `","contents":{"source":"data:,` + data + `"}}`
}

const unit = `,"systemd":{"units":[{"name":"a.service","contents":"[Service]\nExecStart=/bin/true\n"}]}}`

func TestRun(t *testing.T) {
	root := t.TempDir()
	fs, err := hostfs.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	units := &systemdtest.Fake{}
	host := testHost{daemon.Host{FS: fs, Units: units}}
	opts := func(mc *mcfgv1.MachineConfig, skip bool) Options {
		return Options{Node: "n", Config: mc, Host: host, Units: units, Policy: plan.DefaultPolicy().With(plan.Policy{Files: []plan.FileRule{{Path: "/etc", Actions: []plan.Action{{Type: plan.ActNone}}}}}), SkipReboot: skip,
			Log: zap.NewNop()}
	}
	ctx := context.Background()
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(root, p)); return err == nil }

	// A name that is not a Kubernetes name: refused before any record,
	// so a later run with a good file is not blocked.
	for _, name := range []string{"Rendered_A", "rendered-a/../b", "rendered a", ""} {
		err := Run(ctx, opts(config(name, files(file("/etc/n", "x"))), false))
		if err == nil || !strings.Contains(err.Error(), "metadata.name: not a Kubernetes object name") {
			t.Errorf("name %q: %v, want refused naming metadata.name", name, err)
		}
		if exists("/var/lib/nodeconfd/progress.json") || exists("/etc/n") {
			t.Fatalf("name %q: a record or a file was written", name)
		}
	}

	// Refused: nothing written, prepare's message.
	bad := config("rendered-bad", files(file("/etc/good", "x"), file("/proc/x", "x")))
	if err := Run(ctx, opts(bad, false)); err == nil || !strings.Contains(err.Error(), `MachineConfig "rendered-bad": spec.config.storage.files[1].path`) {
		t.Fatalf("bad config: %v", err)
	}
	if exists("/etc/good") || exists("/var/lib/nodeconfd/progress.json") || exists("/var/lib/nodeconfd/applied-config.json") {
		t.Fatal("a refused config wrote something")
	}

	// A file only: no reboot, recorded.
	a := config("rendered-a", files(file("/etc/a", "a"), file("/etc/old", "o")))
	if err := Run(ctx, opts(a, false)); err != nil {
		t.Fatal(err)
	}
	if name, _ := phases.AppliedName(host); name != "rendered-a" || !exists("/etc/old") || exists("/var/lib/nodeconfd/progress.json") {
		t.Fatalf("after rendered-a: applied %q", name)
	}

	// A unit: a reboot; the second run, after the boot, finishes.
	b := config("rendered-b", strings.TrimSuffix(files(file("/etc/a", "b")), "}")+unit)
	if err := Run(ctx, opts(b, false)); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("rendered-b: %v, want rebooting", err)
	}
	if exists("/etc/old") || !exists("/etc/systemd/system/a.service") {
		t.Error("rendered-b was not written from rendered-a")
	}
	// Another config while rendered-b is unfinished is refused.
	if err := Run(ctx, opts(a, false)); err == nil || !strings.Contains(err.Error(), `"rendered-b" is unfinished`) {
		t.Errorf("another config mid-update: %v", err)
	}
	if err := Run(ctx, opts(b, false)); err != nil {
		t.Fatalf("after the boot: %v", err)
	}
	if name, _ := phases.AppliedName(host); name != "rendered-b" || exists("/var/lib/nodeconfd/progress.json") {
		t.Errorf("after rendered-b: applied %q", name)
	}

	// --skip-reboot: no reboot asked for.
	c := config("rendered-c", strings.TrimSuffix(files(file("/etc/a", "c")), "}")+strings.Replace(unit, "true", "false", 1))
	reboots := strings.Count(strings.Join(units.CallLog(), " "), "reboot")
	if err := Run(ctx, opts(c, true)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(units.CallLog(), " "), "reboot"); n != reboots {
		t.Errorf("--skip-reboot rebooted")
	}
	if name, _ := phases.AppliedName(host); name != "rendered-c" {
		t.Errorf("after rendered-c: applied %q", name)
	}
}
