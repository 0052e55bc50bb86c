package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// recordsDir holds the records tests' files; the policy makes their
// changes need no reboot.
const recordsDir = "/etc/nodeconfd-records"

const stateDir = "/var/lib/nodeconfd"

// A progress record the daemon cannot read (empty, truncated, garbage, a
// newer schema, a folder) written while the daemon is stopped: started, the daemon
// reports it (NodeDegraded names the file, a Warning Event), moves it
// aside (the three newest kept), converges to the desired config and
// clears NodeDegraded. The drift monitor still runs afterwards.
func TestUnreadableProgressRecord(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	n, log := nodeWithPolicy(t, "r9", "rendered-r9-0", "nodeDisruptionPolicy:\n  files:\n  - path: "+recordsDir+"/\n    actions: [{type: None}]\n")
	config(t, "rendered-r9-0", ign(nil))
	rec := func(v int) string {
		return fmt.Sprintf(`{"version": %d, "current": "rendered-r9-0", "desired": "rendered-r9-1", "steps": [{"name": "detect", "message": "detected"}]}`, v)
	}
	cases := []struct {
		name, data string
		newConfig  bool // a new desired config set while the daemon was down
		problem    string
	}{
		{"empty", "", true, "unexpected end of JSON input"},
		{"truncated", rec(1)[:40], true, "unexpected end of JSON input"},
		{"garbage", "\x00\x01garbage\xff", true, "invalid character"},
		{"newer version", rec(progress.Version + 1), true, fmt.Sprintf("has version %d", progress.Version+1)},
		{"garbage, no new config", "not json", false, "invalid character"},
		{"a folder", "", true, "it is a folder"},
	}
	recPath := filepath.Join(n.Sys.Root, stateDir, progress.FileName)
	wantNodeCount(t, n) // kept at the daemon's first start
	current := "rendered-r9-0"
	for i, tc := range cases {
		if tc.newConfig {
			next := fmt.Sprintf("rendered-r9-%d", i+1)
			config(t, next, ign(map[string]string{recordsDir + "/round.conf": tc.name + "\n"}))
			current = next
		}
		if err := n.StopDaemon(); err != nil {
			t.Fatal(err)
		}
		folder := tc.problem == "it is a folder"
		if folder {
			// In place of the record (an adoption leaves a complete one).
			if err := os.Remove(recPath); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(recPath, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(recPath, []byte(tc.data), 0o600); err != nil {
			t.Fatal(err)
		}
		if tc.name == "garbage" { // the node count kept too: the daemon counts again
			if err := os.WriteFile(filepath.Join(n.Sys.Root, stateDir, daemon.NodeCountFileName), []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := n.SetDesired(ctx, current); err != nil {
			t.Fatal(err)
		}
		from := log.Len()
		if err := n.StartDaemon(); err != nil {
			t.Fatal(err)
		}
		st, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
			c := testbed.Find(st, "NodeDegraded")
			return c != nil && c.Status == "True" && c.Reason == status.ReasonRecordUnreadable
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		msg := testbed.Find(st, "NodeDegraded").Message
		if !strings.Contains(msg, stateDir+"/"+progress.FileName) || !strings.Contains(msg, tc.problem) ||
			!strings.Contains(msg, "moved it aside to "+stateDir+"/"+progress.FileName+".corrupt-") {
			t.Errorf("%s: NodeDegraded message %q should name the file, say %q and where it went", tc.name, msg, tc.problem)
		}
		if err := waitHealthy(ctx, log, current); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.newConfig {
			if got := readNodeFile(t, n, recordsDir+"/round.conf"); got != tc.name+"\n" {
				t.Errorf("%s: round.conf = %q", tc.name, got)
			}
		}
		if !folder {
			wantAside(t, n, tc.data)
		}
		wantNodeCount(t, n)
		if st := getNode(t, "r9").Annotations["machineconfiguration.openshift.io/state"]; st != "Done" {
			t.Errorf("%s: state = %q, want Done", tc.name, st)
		}
		if getNode(t, "r9").Spec.Unschedulable {
			t.Errorf("%s: node left cordoned", tc.name)
		}
	}
	wantEvents(t, "r9", "MachineConfigNode", status.ReasonRecordUnreadable)
	if got := asideCopies(t, n); len(got) != 3 {
		t.Errorf("%d records kept aside (%v), want 3", len(got), got)
	}
	// The drift monitor runs.
	host := filepath.Join(n.Sys.Root, recordsDir, "round.conf")
	if err := os.WriteFile(host, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", "ConfigDrift"); err != nil {
		t.Fatal(err)
	}
	if msg := log.Condition("NodeDegraded").Message; !strings.Contains(msg, recordsDir+"/round.conf") {
		t.Errorf("drift message %q should name the file", msg)
	}
}

// waitHealthy waits until the node runs config with NodeDegraded=False.
func waitHealthy(ctx context.Context, log *testbed.StatusLog, config string) error {
	if err := waitCurrent(ctx, log, config); err != nil {
		return err
	}
	return log.WaitFor(ctx, "NodeDegraded", "False", "")
}

func asideCopies(t *testing.T, n *testbed.Node) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(n.Sys.Root, stateDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), progress.FileName+".corrupt-") {
			names = append(names, e.Name())
		}
	}
	return names
}

// wantNodeCount checks the cluster's node count kept on the node: a
// count, mode 0600.
func wantNodeCount(t *testing.T, n *testbed.Node) {
	t.Helper()
	p := filepath.Join(n.Sys.Root, stateDir, daemon.NodeCountFileName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the node count kept on the node: %v", err)
	}
	if k, err := strconv.Atoi(strings.TrimSpace(string(data))); err != nil || k < 1 {
		t.Errorf("the node count kept on the node is %q, want a count", data)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, %v; want 0600", p, fi.Mode(), err)
	}
}

// wantAside checks that a copy moved aside holds data, mode 0600.
func wantAside(t *testing.T, n *testbed.Node, data string) {
	t.Helper()
	for _, name := range asideCopies(t, n) {
		p := filepath.Join(n.Sys.Root, stateDir, name)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) == data {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, %v; want 0600", name, fi.Mode(), err)
			}
			return
		}
	}
	t.Errorf("no copy of the record %q moved aside", data)
}

// The config the node runs deleted from the API server: the daemon, which
// keeps it on the node, still idles with its drift monitor on, and the next
// update removes the files only the deleted config had. A node whose copy
// is missing (updated by an older daemon) or of another config takes it
// from the API server.
func TestCurrentConfigDeleted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	n, log := nodeWithPolicy(t, "r10", "rendered-r10-a", "nodeDisruptionPolicy:\n  files:\n  - path: "+recordsDir+"/\n    actions: [{type: None}]\n")
	config(t, "rendered-r10-a", ign(nil))
	config(t, "rendered-r10-b", ign(map[string]string{recordsDir + "/keep.conf": "b\n", recordsDir + "/only-b.conf": "b\n"}))
	config(t, "rendered-r10-c", ign(map[string]string{recordsDir + "/keep.conf": "c\n"}))
	if err := n.SetDesired(ctx, "rendered-r10-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-r10-b"); err != nil {
		t.Fatal(err)
	}
	wantApplied(t, n, "rendered-r10-b")

	// No copy (an upgrade from an older daemon): taken from the API server.
	if err := n.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(n.Sys.Root, stateDir, phases.AppliedFileName)); err != nil {
		t.Fatal(err)
	}
	restartIdle(ctx, t, n)
	wantApplied(t, n, "rendered-r10-b")

	// A copy of another config (the node moved on by someone else): the
	// annotation wins, the API server's copy of currentConfig is kept.
	if err := n.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	stale := `{"metadata":{"name":"rendered-r10-a"},"spec":{"config":{"ignition":{"version":"3.4.0"}}}}`
	if err := os.WriteFile(filepath.Join(n.Sys.Root, stateDir, phases.AppliedFileName), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	restartIdle(ctx, t, n)
	wantApplied(t, n, "rendered-r10-b")

	// The current config deleted: the daemon idles on its copy.
	if err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Delete(ctx, "rendered-r10-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := n.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	restartIdle(ctx, t, n)
	if c := log.Condition("NodeDegraded"); c == nil || c.Status != "False" {
		t.Errorf("NodeDegraded = %+v, want False", c)
	}
	host := filepath.Join(n.Sys.Root, recordsDir, "only-b.conf")
	if err := os.WriteFile(host, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", "ConfigDrift"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host, []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
		t.Fatal(err)
	}

	// The update from the deleted config removes what only it had.
	if err := n.SetDesired(ctx, "rendered-r10-c"); err != nil {
		t.Fatal(err)
	}
	if err := waitHealthy(ctx, log, "rendered-r10-c"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(host); !os.IsNotExist(err) {
		t.Errorf("%s/only-b.conf still there: %v", recordsDir, err)
	}
	if got := readNodeFile(t, n, recordsDir+"/keep.conf"); got != "c\n" {
		t.Errorf("keep.conf = %q", got)
	}
	wantApplied(t, n, "rendered-r10-c")
	if l := n.DaemonLog(); strings.Contains(l, "only-b") && strings.Contains(l, "\"b\\n\"") {
		t.Error("the daemon's log shows a config's contents")
	}
}

// restartIdle starts the daemon and waits until it idles again with its
// drift monitor on.
func restartIdle(ctx context.Context, t *testing.T, n *testbed.Node) {
	t.Helper()
	const idle = "Node is up to date; config drift monitor running"
	before := strings.Count(n.DaemonLog(), idle)
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	for strings.Count(n.DaemonLog(), idle) == before {
		if ctx.Err() != nil {
			t.Fatalf("the daemon never idled again; its log:\n%s", tail(n.DaemonLog(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// wantApplied checks the copy of the applied config kept on the node.
func wantApplied(t *testing.T, n *testbed.Node, name string) {
	t.Helper()
	p := filepath.Join(n.Sys.Root, stateDir, phases.AppliedFileName)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("no applied config kept: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", p, fi.Mode())
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var mc mcfgv1.MachineConfig
	if err := json.Unmarshal(data, &mc); err != nil || mc.Name != name {
		t.Errorf("applied config %q, %v; want %s", mc.Name, err, name)
	}
}

// A node whose progress record is lost while this daemon's cordon is on
// (its annotation) and whose update drains nothing: the update takes the
// cordon over, says Cordoned=True from its start, and lifts it at its
// end; it is never left cordoned with a status that does not say so.
func TestLostRecordLiftsItsCordon(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	config(t, "rendered-lostcordon-0", ign(nil))
	config(t, "rendered-lostcordon-1", ign(map[string]string{recordsDir + "/lost.conf": "1\n"}))
	n, log := nodeWithPolicy(t, "lostcordon", "rendered-lostcordon-0", "nodeDisruptionPolicy:\n  files:\n  - path: "+recordsDir+"/\n    actions: [{type: None}]\n")
	if err := n.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"machineconfiguration.openshift.io/cordonedBy": "nodeconfd"}},
		"spec":     map[string]any{"unschedulable": true}})
	if _, err := bed.Kube.CoreV1().Nodes().Patch(ctx, "lostcordon", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.Sys.Root, stateDir, progress.FileName), []byte("lost"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-lostcordon-1"); err != nil {
		t.Fatal(err)
	}
	from := log.Len()
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-lostcordon-1"); err != nil {
		t.Fatal(err)
	}
	if getNode(t, "lostcordon").Spec.Unschedulable {
		t.Error("the lost update's cordon was left on the node")
	}
	if tr := log.Transitions(from); !slices.Contains(tr, "Cordoned=True") || !slices.Contains(tr, "Uncordoned=True") {
		t.Errorf("the status never said the node was cordoned, then uncordoned: %v", tr)
	}
}
