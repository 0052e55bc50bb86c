package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// ign builds an Ignition 3.4 config (see testbed.Ignition).
func ign(files map[string]string, extra ...string) string { return testbed.Ignition(files, extra...) }

// node starts a node that runs config base (adopted: base has nothing the
// node lacks) and waits for the daemon to report it up to date.
func node(t *testing.T, name, base string) (*testbed.Node, *testbed.StatusLog) {
	t.Helper()
	return nodeOpts(t, name, base, testbed.NodeOptions{})
}

func nodeOpts(t *testing.T, name, base string, opts testbed.NodeOptions) (*testbed.Node, *testbed.StatusLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := bed.AddTestNode(ctx, t, name, base, opts)
	wctx, wcancel := context.WithCancel(context.Background())
	t.Cleanup(wcancel)
	log, err := bed.RecordStatus(wctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "Updated", "True", ""); err != nil {
		t.Fatal(err)
	}
	return n, log
}

func config(t *testing.T, name, ignition string) {
	t.Helper()
	if err := bed.CreateConfig(context.Background(), testbed.MachineConfig(name, ignition)); err != nil {
		t.Fatal(err)
	}
}

func readNodeFile(t *testing.T, n *testbed.Node, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.Sys.Root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := bed.Kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rebootSequence is the contract's sequence of condition transitions of an
// update that drains and reboots the node.
var rebootSequence = []string{
	"Updated=False", "UpdatePrepared=Unknown", "UpdateCompatible=Unknown", "UpdateCompatible=True", "UpdatePrepared=True",
	"UpdateExecuted=Unknown", "Cordoned=Unknown", "Cordoned=True", "Drained=Unknown", "Drained=True",
	"AppliedFilesAndOS=Unknown", "AppliedFilesAndOS=True", "UpdateExecuted=True",
	"UpdatePostActionComplete=Unknown", "RebootedNode=Unknown", "RebootedNode=True",
	"UpdatePostActionComplete=True",
	"UpdateComplete=Unknown", "HealthChecked=Unknown", "HealthChecked=True",
	"Uncordoned=Unknown", "Uncordoned=True", "UpdateComplete=True",
	"Resumed=True", "Updated=True",
}

// wantSeq checks that got is exactly want.
func wantSeq(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("condition transitions:\n got: %s\nwant: %s", strings.Join(got, " "), strings.Join(want, " "))
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// nodeWithPolicy is node() with an admin post-action policy file and
// args, more daemon flags.
func nodeWithPolicy(t *testing.T, name, base, policy string, args ...string) (*testbed.Node, *testbed.StatusLog) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return nodeOpts(t, name, base, testbed.NodeOptions{ExtraArgs: append([]string{"--post-action-policy", p}, args...)})
}

// killOnceWritten SIGKILLs n's daemon as soon as the node file path (the
// first file of an update's write) is on disk: the write is cut short.
func killOnceWritten(ctx context.Context, t *testing.T, n *testbed.Node, path string) {
	t.Helper()
	host := filepath.Join(n.Sys.Root, path)
	for {
		if _, err := os.Stat(host); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s was never written", path)
		}
		time.Sleep(time.Millisecond)
	}
	if err := n.KillDaemon(); err != nil {
		t.Fatal(err)
	}
}

// killDuring stops the node's daemon, arms its SIGKILL at point (package
// daemon/faultpoint), gives the node the desired config and starts the
// daemon, then waits until the daemon killed itself there. ResumeDaemon
// starts it again.
func killDuring(ctx context.Context, n *testbed.Node, desired, point string) error {
	if err := n.StopDaemon(); err != nil {
		return err
	}
	killed := n.ArmKill(point)
	if err := n.SetDesired(ctx, desired); err != nil {
		return err
	}
	if err := n.StartDaemon(); err != nil {
		return err
	}
	return n.WaitKilled(ctx, killed)
}
