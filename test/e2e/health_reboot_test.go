package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// badUnit fails at every boot; the health gate lists it.
const badUnit = "[Unit]\nDescription=fails at boot\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/false\n" +
	"[Install]\nWantedBy=multi-user.target\n"

// badUnitConfig is a config adding the unit name that fails at boot, with
// files.
func badUnitConfig(t *testing.T, config, unit string, files map[string]string) {
	t.Helper()
	configWith(t, config, ign(files, `"systemd":{"units":[{"name":"`+unit+`","enabled":true,"contents":`+jsonString(badUnit)+`}]}`))
}

func configWith(t *testing.T, name, ignition string) { config(t, name, ignition) }

// hasMessage reports whether a condition's message of st contains msg.
func hasMessage(st mcfgv1.MachineConfigNodeStatus, msg string) bool {
	for _, c := range st.Conditions {
		if strings.Contains(c.Message, msg) {
			return true
		}
	}
	return false
}

// Health 2: a reboot update adding a unit that fails at boot, the unit in
// the gate's list: the node rolls back by itself (the unit file and its
// enablement gone, the files restored, one reboot for the update and one
// for the rollback), reports why, and stays there.
func TestHealthUnitRollbackReboot(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const dir, unit = "/etc/nodeconfd-hc2", "hc2-bad.service"
	config(t, "rendered-hc2-a", ign(map[string]string{dir + "/conf": "good\n"}))
	badUnitConfig(t, "rendered-hc2-b", unit, map[string]string{dir + "/conf": "bad\n"})
	n, log := healthNode(t, "hc2", "rendered-hc2-a", dir, testbed.NodeOptions{},
		"--health-units", unit, "--health-timeout", "2m")
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-hc2-b"); err != nil {
		t.Fatal(err)
	}
	st, err := waitRolledBack(ctx, log, from, "rendered-hc2-b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Conditions {
		if c.Type == "HealthChecked" && (!strings.Contains(c.Message, "unit "+unit+" to be active: it is failed") ||
			!strings.Contains(c.Message, "Rebooted into rendered-hc2-a")) {
			t.Errorf("HealthChecked message %q", c.Message)
		}
	}
	if got := readNodeFile(t, n, dir+"/conf"); got != "good\n" {
		t.Errorf("after the rollback %s/conf = %q", dir, got)
	}
	for _, p := range []string{"/etc/systemd/system/" + unit, "/etc/systemd/system/multi-user.target.wants/" + unit} {
		if _, err := os.Lstat(filepath.Join(n.Sys.Root, p)); err == nil {
			t.Errorf("%s is still there after the rollback", p)
		}
	}
	if b := n.Sys.Boots(); b != 3 {
		t.Errorf("boots = %d, want 3 (one reboot for the update, one for the rollback)", b)
	}
	wantHeld(t, log, "hc2", "rendered-hc2-a", "rendered-hc2-b")
	stays(t, n, log, "rendered-hc2-a")
	if b := n.Sys.Boots(); b != 3 {
		t.Errorf("boots = %d after the hold, want 3", b)
	}
}

// Health 3: three nodes, the same bad config for all, given to the first
// node alone (as a controller with maxUnavailable 1 would), then to the
// other two once it failed there: the first node's gate fails and it rolls
// back; the other two never cordon (they wait, saying where the config
// failed).
func TestHealthFailureStopsBadConfig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const dir, unit = "/etc/nodeconfd-hc3", "hc3-bad.service"
	names := []string{"hc3-1", "hc3-2", "hc3-3"}
	config(t, "rendered-hc3-a", ign(map[string]string{dir + "/conf": "good\n"}))
	badUnitConfig(t, "rendered-hc3-b", unit, map[string]string{dir + "/conf": "bad\n"})
	opts := testbed.NodeOptions{}
	nodes := make([]*testbed.Node, len(names))
	logs := make([]*testbed.StatusLog, len(names))
	// Each daemon through a proxy that counts its requests (health_watch_test.go).
	proxies := make([]*hcProxy, len(names))
	for i, name := range names {
		proxies[i] = newHCProxy(t, name)
		nodes[i], logs[i] = healthNode(t, name, "rendered-hc3-a", dir, opts, "--health-units", unit, "--health-timeout", "2m",
			"--kubeconfig", proxies[i].Kubeconfig)
	}
	cordons := watchCordons(ctx, t, names)
	from := make([]int, len(names))
	const first = 0
	from[first] = logs[first].Len()
	if err := nodes[first].SetDesired(ctx, "rendered-hc3-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := waitRolledBack(ctx, logs[first], from[first], "rendered-hc3-b"); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, logs[first], names[first], "rendered-hc3-a", "rendered-hc3-b")
	// The others, given the config that failed, see the failure and wait.
	for i, n := range nodes {
		if i == first {
			continue
		}
		from[i] = logs[i].Len()
		if err := n.SetDesired(ctx, "rendered-hc3-b"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range names {
		if i == first {
			continue
		}
		waitMsg := "failed the health gate on node " + names[first]
		if _, err := logs[i].WaitStatus(ctx, from[i], func(st mcfgv1.MachineConfigNodeStatus) bool { return hasMessage(st, waitMsg) }); err != nil {
			t.Errorf("%s: %v", names[i], err)
		}
	}
	wantWaitWatches(t, proxies, names, first) // 40 s without a LIST of the Nodes
	for i, name := range names {
		if i == first {
			continue
		}
		cordons.mu.Lock()
		n := len(cordons.first[name])
		cordons.mu.Unlock()
		if n > 0 {
			t.Errorf("%s was cordoned %d times, want never", name, n)
		}
		if b := nodes[i].Sys.Boots(); b != 1 {
			t.Errorf("%s booted %d times, want 1", name, b)
		}
		if a := getNode(t, name).Annotations[annCurrent]; a != "rendered-hc3-a" {
			t.Errorf("%s currentConfig = %q", name, a)
		}
	}
	if b := nodes[first].Sys.Boots(); b != 3 {
		t.Errorf("%s booted %d times, want 3", names[first], b)
	}
	wantWakeOnRemoval(ctx, t, names, first, cordons)
}
