package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// `nodeconfd start --once-from FILE` on a systemd node, with no API server
// (no kubeconfig, nothing in-cluster): a bad file is refused with prepare's
// message and nothing written; a config with --skip-reboot is written and
// recorded with no reboot; the next one (diffed against the recorded copy)
// reboots, and the same command after the boot finishes it. The daemon,
// started later against the control plane, adopts the config without
// rewriting a file.
func TestOnceFrom(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	n, err := bed.AddNode(ctx, "once1", testbed.NodeOptions{NoDaemon: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", n.DaemonLog())
		}
		n.Stop(context.Background())
	})
	dir := "/etc/nodeconfd-once"
	state := filepath.Join(n.Sys.Root, "/var/lib/nodeconfd")

	// Refused: a path in /proc. Nothing is written.
	bad := testbed.MachineConfig("rendered-once1-bad", ign(map[string]string{dir + "/good.conf": "good\n", "/proc/once": "x"}))
	out, err := onceFrom(ctx, t, n, bad)
	if code := exitCode(err); code != 1 || !strings.Contains(out, `MachineConfig "rendered-once1-bad": spec.config.storage.files[1].path`) {
		t.Fatalf("bad config: exit %d, output:\n%s\nwant exit 1 naming the field", code, out)
	}
	for _, p := range []string{filepath.Join(n.Sys.Root, dir, "good.conf"), filepath.Join(state, "applied-config.json"),
		filepath.Join(state, "progress.json")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written by a refused config", p)
		}
	}

	onceRuns(ctx, t, n, dir)
}

// onceRuns applies a config with --skip-reboot, then one that reboots,
// finished by a second run after the boot; the daemon then adopts it.
func onceRuns(ctx context.Context, t *testing.T, n *testbed.Node, dir string) {
	t.Helper()
	// --skip-reboot: a unit (a reboot's change) and a file, no reboot.
	unit := "[Unit]\nDescription=once\n[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
	units := `"systemd":{"units":[{"name":"once1.service","enabled":true,"contents":` + jsonString(unit) + `}]}`
	first := testbed.MachineConfig("rendered-once1-a", ign(map[string]string{dir + "/a.conf": "a\n", dir + "/old.conf": "old\n"}, units))
	if out, err := onceFrom(ctx, t, n, first, "--skip-reboot"); err != nil {
		t.Fatalf("--skip-reboot: %v\n%s", err, out)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots after --skip-reboot = %d, want 1", b)
	}
	wantOnceApplied(t, n, "rendered-once1-a")
	if got := readNodeFile(t, n, dir+"/old.conf"); got != "old\n" {
		t.Errorf("old.conf = %q", got)
	}
	if st := isEnabled(ctx, t, n, "once1.service"); st != "enabled" {
		t.Errorf("once1.service is %s, want enabled", st)
	}

	// The next config reboots; the same command after the boot finishes.
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOnceFrom once@example"
	second := testbed.MachineConfig("rendered-once1-b", ign(map[string]string{dir + "/a.conf": "b\n"}, units,
		`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["`+key+`"]}]}`))
	second.Spec.Config.Raw = []byte(strings.Replace(string(second.Spec.Config.Raw), `"enabled":true`, `"enabled":true,"dropins":[{"name":"10-once.conf","contents":"[Service]\nEnvironment=X=1\n"}]`, 1))
	if out, err := onceFrom(ctx, t, n, second); err != nil || !strings.Contains(out, "rebooting") {
		t.Fatalf("reboot run: %v\n%s", err, out)
	}
	if err := n.Sys.WaitBoot(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if out, err := onceFrom(ctx, t, n, second); err != nil {
		t.Fatalf("run after the boot: %v\n%s", err, out)
	}
	wantOnceApplied(t, n, "rendered-once1-b")
	if got := readNodeFile(t, n, dir+"/a.conf"); got != "b\n" {
		t.Errorf("a.conf = %q, want b", got)
	}
	if _, err := os.Lstat(filepath.Join(n.Sys.Root, dir, "old.conf")); err == nil {
		t.Error("old.conf, which only the recorded config had, is still there")
	}
	if got := readNodeFile(t, n, "/home/core/.ssh/authorized_keys"); !strings.Contains(got, key) {
		t.Errorf("authorized_keys = %q, want the key", got)
	}
	onceAdopted(ctx, t, n, second, dir)
}

// onceAdopted checks that the daemon, started against the control plane on
// the node once-from set up with mc, adopts mc without rewriting a file.
func onceAdopted(ctx context.Context, t *testing.T, n *testbed.Node, second *mcfgv1.MachineConfig, dir string) {
	t.Helper()
	watched := []string{dir + "/a.conf", "/etc/systemd/system/once1.service",
		"/etc/systemd/system/once1.service.d/10-once.conf", "/home/core/.ssh/authorized_keys"}
	before := stats(t, n, watched)

	// The daemon against the control plane adopts it: nothing rewritten.
	if err := bed.CreateConfig(ctx, second); err != nil {
		t.Fatal(err)
	}
	log, err := bed.RecordStatus(ctx, "once1")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-once1-b"); err != nil {
		t.Fatal(err)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-once1-b"); err != nil {
		t.Fatal(err)
	}
	if msg := log.Condition("Updated").Message; !strings.Contains(msg, "adopted") {
		t.Errorf("Updated message %q, want the config adopted", msg)
	}
	after := stats(t, n, watched)
	for i, p := range watched {
		if !os.SameFile(before[i], after[i]) || !before[i].ModTime().Equal(after[i].ModTime()) {
			t.Errorf("%s was rewritten by the daemon", p)
		}
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2", b)
	}
}

// onceFrom runs `nodeconfd start --once-from` on n with no API server.
func onceFrom(ctx context.Context, t *testing.T, n *testbed.Node, mc *mcfgv1.MachineConfig, args ...string) (string, error) {
	t.Helper()
	mc.APIVersion, mc.Kind = "machineconfiguration.openshift.io/v1", "MachineConfig"
	data, err := json.Marshal(mc)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), mc.Name+".json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bed.Daemon, append([]string{"start", "--once-from", file, "--node-name", n.Name,
		"--root-mount", n.Sys.Root, "--system-bus-address", n.Sys.BusAddress,
		"--allowed-config-pattern", testbed.TestConfigPattern}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no KUBERNETES_SERVICE_HOST, no kubeconfig
	out, err := cmd.CombinedOutput()
	t.Logf("once-from %s %v:\n%s", mc.Name, args, out)
	return string(out), err
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// wantOnceApplied checks that the node keeps name as its applied config and no
// progress record.
func wantOnceApplied(t *testing.T, n *testbed.Node, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.Sys.Root, "/var/lib/nodeconfd/applied-config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mc mcfgv1.MachineConfig
	if err := json.Unmarshal(data, &mc); err != nil || mc.Name != name {
		t.Errorf("applied-config.json names %q (%v), want %s", mc.Name, err, name)
	}
	if _, err := os.Lstat(filepath.Join(n.Sys.Root, "/var/lib/nodeconfd/progress.json")); err == nil {
		t.Error("a progress record is left")
	}
}

func stats(t *testing.T, n *testbed.Node, paths []string) []os.FileInfo {
	t.Helper()
	var out []os.FileInfo
	for _, p := range paths {
		fi, err := os.Stat(filepath.Join(n.Sys.Root, p))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fi)
	}
	return out
}

// A node set up by --once-from whose cluster has moved on to another
// config is updated from the config it was set up with: what only that
// one had is removed, not left behind.
func TestOnceFromThenNewerConfig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := "/etc/nodeconfd-once2"
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte("nodeDisruptionPolicy: {files: [{path: "+dir+"/, actions: [{type: None}]}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := bed.AddNode(ctx, "once2", testbed.NodeOptions{NoDaemon: true, ExtraArgs: []string{"--post-action-policy", policy}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", n.DaemonLog())
		}
		n.Stop(context.Background())
	})
	boot := testbed.MachineConfig("rendered-once2-a", ign(map[string]string{dir + "/kept": "a\n", dir + "/only-a": "a\n"}))
	if out, err := onceFrom(ctx, t, n, boot, "--skip-reboot"); err != nil {
		t.Fatalf("once-from: %v\n%s", err, out)
	}
	config(t, "rendered-once2-b", ign(map[string]string{dir + "/kept": "b\n", dir + "/new": "b\n"}))
	log, err := bed.RecordStatus(ctx, "once2")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-once2-b"); err != nil {
		t.Fatal(err)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-once2-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(n.Sys.Root, dir, "only-a")); err == nil {
		t.Error("only-a, which only the once-from config had, was left behind")
	}
	if got := readNodeFile(t, n, dir+"/kept"); got != "b\n" {
		t.Errorf("kept = %q", got)
	}
	if msg := log.Condition("UpdateCompatible").Message; !strings.Contains(msg, "(1 removed)") {
		t.Errorf("UpdateCompatible %q, want the diff from rendered-once2-a (a file removed)", msg)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1 (the policy makes the change need nothing)", b)
	}
}
