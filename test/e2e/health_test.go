package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Annotations of the health gate.
const (
	annFailed  = "machineconfiguration.openshift.io/failedConfig"
	annRetry   = "machineconfiguration.openshift.io/retryFailedConfig"
	annState   = "machineconfiguration.openshift.io/state"
	annCurrent = "machineconfiguration.openshift.io/currentConfig"
	// labelFailedHash is failedConfig's index (names.FailedConfigHashLabel).
	labelFailedHash = "machineconfiguration.openshift.io/failedConfigHash"
)

// healthNode starts a node whose files under dir need no post action,
// with the health gate's flags.
func healthNode(t *testing.T, name, base, dir string, opts testbed.NodeOptions, gate ...string) (*testbed.Node, *testbed.StatusLog) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte("nodeDisruptionPolicy:\n  files:\n  - path: "+dir+"/\n    actions: [{type: None}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.ExtraArgs = append(append(opts.ExtraArgs, "--post-action-policy", p, "--retry-initial", "1s", "--retry-max", "5s"), gate...)
	n, log := nodeOpts(t, name, base, opts)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("status of %s:\n%s", name, log.Describe())
		}
	})
	return n, log
}

// waitRolledBack waits for the gate's condition to say the node was rolled
// back from config (after from, and after the node's previous attempt, if
// any, was reset).
func waitRolledBack(ctx context.Context, log *testbed.StatusLog, from int, config string) (mcfgv1.MachineConfigNodeStatus, error) {
	reset := false
	return log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		for _, c := range st.Conditions {
			if c.Type != "HealthChecked" {
				continue
			}
			if c.Status != "False" || c.Reason != "RolledBack" {
				reset = true
			}
			if reset && c.Status == "False" && c.Reason == "RolledBack" && strings.Contains(c.Message, "Config "+config+" failed") {
				return true
			}
		}
		return false
	})
}

// wantHeld checks that node name holds config current after failed failed.
func wantHeld(t *testing.T, log *testbed.StatusLog, name, current, failed string) {
	t.Helper()
	node := getNode(t, name)
	for ann, want := range map[string]string{annCurrent: current, annState: "Degraded", annFailed: failed} {
		if got := node.Annotations[ann]; got != want {
			t.Errorf("annotation %s = %q, want %q", ann, got, want)
		}
	}
	if got, want := node.Labels[labelFailedHash], kube.FailedConfigHash(failed); got != want {
		t.Errorf("label %s = %q, want %q", labelFailedHash, got, want)
	}
	if node.Spec.Unschedulable {
		t.Error("node left cordoned after the rollback")
	}
	if c := log.Condition("NodeDegraded"); c == nil || c.Status != "True" || c.Reason != "HealthCheckFailed" ||
		!strings.Contains(c.Message, "Config "+failed+" failed the health gate") {
		t.Errorf("NodeDegraded = %+v", c)
	}
	if st := log.Latest(); st.ConfigVersion == nil || st.ConfigVersion.Current != current {
		t.Errorf("status.configVersion = %+v, want current %s", st.ConfigVersion, current)
	}
	wantEvents(t, name, "Node", "HealthCheckFailed", "RolledBack")
	wantEvents(t, name, "MachineConfigNode", "HealthCheckFailed", "RolledBack")
}

// stays checks, for a while, that the node holds its config: no update
// starts again.
func stays(t *testing.T, n *testbed.Node, log *testbed.StatusLog, current string) {
	t.Helper()
	from := log.Len()
	starts := strings.Count(n.DaemonLog(), "Update detected")
	time.Sleep(15 * time.Second)
	if got := log.Transitions(from); len(got) > 0 {
		t.Errorf("held node's status changed: %v", got)
	}
	if s := strings.Count(n.DaemonLog(), "Update detected"); s != starts {
		t.Errorf("held node started %d more updates", s-starts)
	}
	if a := getNode(t, n.Name).Annotations[annCurrent]; a != current {
		t.Errorf("currentConfig = %q while held, want %s", a, current)
	}
}

// Health 1: a rebootless update whose check command fails is rolled back
// without a reboot (the files as before, the file it added gone), reported,
// and held; a retry annotation tries it again; a new desired config is
// taken up normally.
func TestHealthCommandRollbackRebootless(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const dir = "/etc/nodeconfd-hc1"
	config(t, "rendered-hc1-a", ign(map[string]string{dir + "/conf": "good\n"}))
	config(t, "rendered-hc1-b", ign(map[string]string{dir + "/conf": "bad\n", dir + "/broken": "x\n",
		dir + "/new.d/sub/also": "x\n"}))
	// A file where the failed config made a folder (issue 27).
	config(t, "rendered-hc1-c", ign(map[string]string{dir + "/conf": "better\n", dir + "/new.d": "a file\n"}))
	n, log := healthNode(t, "hc1", "rendered-hc1-a", dir, testbed.NodeOptions{},
		"--health-command", "/usr/bin/test ! -e "+dir+"/broken", "--health-timeout", "15s")
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-hc1-b"); err != nil {
		t.Fatal(err)
	}
	st, err := waitRolledBack(ctx, log, from, "rendered-hc1-b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Conditions {
		if c.Type == "HealthChecked" && (!strings.Contains(c.Message, "check command /usr/bin/test") ||
			!strings.Contains(c.Message, "Rolled back to rendered-hc1-a")) {
			t.Errorf("HealthChecked message %q", c.Message)
		}
	}
	if got := readNodeFile(t, n, dir+"/conf"); got != "good\n" {
		t.Errorf("after the rollback %s/conf = %q", dir, got)
	}
	if _, err := os.Stat(filepath.Join(n.Sys.Root, dir, "broken")); err == nil {
		t.Error("the file the failed config added is still there")
	}
	if _, err := os.Lstat(filepath.Join(n.Sys.Root, dir, "new.d")); !os.IsNotExist(err) {
		t.Errorf("the folders the failed config made: %v, want them gone", err)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1 (no reboot)", b)
	}
	wantHeld(t, log, "hc1", "rendered-hc1-a", "rendered-hc1-b")
	stays(t, n, log, "rendered-hc1-a")
	wantMetric(t, n, `nodeconfd_health_gate_results_total{result="failed"}`, 1)
	wantMetric(t, n, `nodeconfd_health_gate_results_total{result="rolled-back"}`, 1)

	// A retry tries the failed config again (and fails again).
	from = log.Len()
	if err := n.Annotate(ctx, map[string]string{annRetry: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := waitRolledBack(ctx, log, from, "rendered-hc1-b"); err != nil {
		t.Fatal(err)
	}
	if got := log.Transitions(from); !strings.Contains(strings.Join(got, " "), "AppliedFilesAndOS=True") {
		t.Errorf("the retry did not write the config again: %v", got)
	}
	wantHeld(t, log, "hc1", "rendered-hc1-a", "rendered-hc1-b")

	// A new desired config is taken up normally.
	if err := n.SetDesired(ctx, "rendered-hc1-c"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-hc1-c"); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, n, dir+"/conf"); got != "better\n" {
		t.Errorf("%s/conf = %q", dir, got)
	}
	if got := readNodeFile(t, n, dir+"/new.d"); got != "a file\n" {
		t.Errorf("%s/new.d = %q", dir, got)
	}
	if c := log.Condition("HealthChecked"); c == nil || c.Status != "True" {
		t.Errorf("HealthChecked after the good config = %+v", c)
	}
	if a := getNode(t, "hc1").Annotations[annState]; a != "Done" {
		t.Errorf("state = %q", a)
	}
	// The report of rendered-hc1-b lapsed with the move to rendered-hc1-c: the daemon removes
	// it and its label, so it can never hold a later rollback to rendered-hc1-b (issue 27).
	for ctx.Err() == nil {
		n := getNode(t, "hc1")
		if n.Annotations[annFailed] == "" && n.Labels[labelFailedHash] == "" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Errorf("the lapsed failedConfig report stayed: %v", getNode(t, "hc1").Annotations[annFailed])
	}
	fmt.Fprintln(os.Stderr, "health gate messages:", log.Condition("HealthChecked").Message)
}
