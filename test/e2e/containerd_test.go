package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// ctrdStarts is where the stand-in containerd.service counts its starts.
const ctrdStarts = "/var/lib/containerd-starts"

// standInContainerd adds an enabled stand-in containerd.service to a node's
// root: it runs forever and appends a line to ctrdStarts at each start.
func standInContainerd(root string) error {
	unit := "[Unit]\nDescription=Stand-in for containerd (nodeconfd test bed)\n\n[Service]\nType=simple\n" +
		"ExecStartPre=/bin/sh -c 'echo start >>" + ctrdStarts + "'\nExecStart=/bin/sleep infinity\n\n" +
		"[Install]\nWantedBy=multi-user.target\n"
	dir := filepath.Join(root, "etc/systemd/system")
	if err := os.WriteFile(filepath.Join(dir, "containerd.service"), []byte(unit), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "multi-user.target.wants"), 0o755); err != nil {
		return err
	}
	return os.Symlink("/etc/systemd/system/containerd.service", filepath.Join(dir, "multi-user.target.wants", "containerd.service"))
}

// A node whose kubelet reports containerd (containerRuntimeVersion
// containerd://2.1.0) takes containerd's default rules: a registry host
// file under /etc/containerd/certs.d is written with no drain, no reboot
// and no restart; a change of /etc/containerd/config.toml restarts
// containerd.service, undrained, reported as a restart and not as
// ReloadedCRIO; CRI-O's registries.d no longer reloads crio.service.
func TestContainerdNodeDefaults(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const name = "ctrd"
	files := map[string]string{}
	step := func(cfg string, set map[string]string) {
		for k, v := range set {
			files[k] = v
		}
		copied := map[string]string{}
		for k, v := range files {
			copied[k] = v
		}
		config(t, "rendered-"+name+"-"+cfg, ign(copied))
	}
	config(t, "rendered-"+name+"-base", ign(nil))
	n, log := nodeOpts(t, name, "rendered-"+name+"-base", testbed.NodeOptions{
		ContainerRuntimeVersion: "containerd://2.1.0", Setup: standInContainerd})
	starts := func() int { return strings.Count(readNodeFile(t, n, ctrdStarts), "start") }
	if s := starts(); s != 1 {
		t.Fatalf("the stand-in containerd started %d times at boot, want 1", s)
	}

	update := func(cfg, postMsg string, restarts int) {
		t.Helper()
		boots, reloads, before := n.Sys.Boots(), crioReloads(n), starts()
		if err := n.SetDesired(ctx, "rendered-"+name+"-"+cfg); err != nil {
			t.Fatal(err)
		}
		if err := waitCurrent(ctx, log, "rendered-"+name+"-"+cfg); err != nil {
			t.Fatal(err)
		}
		if got := log.Condition("UpdatePostActionComplete").Message; got != postMsg {
			t.Errorf("%s: post action %q, want %q", cfg, got, postMsg)
		}
		for _, c := range []string{"Cordoned", "Drained"} {
			if got := log.Condition(c); got.Reason != "NotRequired" {
				t.Errorf("%s: %s %s %q, want NotRequired", cfg, c, got.Reason, got.Message)
			}
		}
		if got := log.Condition("ReloadedCRIO"); got.Status == "True" {
			t.Errorf("%s: ReloadedCRIO True on a containerd node: %q", cfg, got.Message)
		}
		if n.Sys.Boots() != boots {
			t.Errorf("%s: the node rebooted", cfg)
		}
		if crioReloads(n) != reloads {
			t.Errorf("%s: crio.service reloaded on a containerd node", cfg)
		}
		if got := starts() - before; got != restarts {
			t.Errorf("%s: containerd started %d times, want %d", cfg, got, restarts)
		}
	}

	step("hosts", map[string]string{"/etc/containerd/certs.d/registry.example.com/hosts.toml": "server = \"https://registry.example.com\"\n"})
	update("hosts", "Changes need no reboot or reload", 0)
	step("config", map[string]string{"/etc/containerd/config.toml": "version = 3\n"})
	update("config", "Restarted containerd.service", 1)
	out, err := bed.Kubectl(ctx, "get", "events", "-A", "--field-selector", "reason=ServiceRestart,involvedObject.name="+name,
		"-o", "jsonpath={.items[*].message}")
	if err != nil || !strings.Contains(string(out), "Service containerd.service was restarted.") {
		t.Errorf("no ServiceRestart Event for containerd.service: %v %s", err, out)
	}
	step("regsd", map[string]string{"/etc/containers/registries.d/a.yaml": "default-docker: {}\n"})
	update("regsd", "Changes need no reboot or reload", 0)
}
