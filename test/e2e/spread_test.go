package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// The start of an update spread over the cluster (--update-spread): the
// daemon counts the real API server's Nodes with its own service-account
// token, waits for its point of the window with nothing written, then
// updates as ever.
func TestUpdateSpread(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const perNode = 500 * time.Millisecond
	// Ten more Nodes (no kubelet, no daemon): at least 11 in the cluster,
	// a window of at least 5 s, whatever other tests run beside this one.
	for i := range 10 {
		name := fmt.Sprintf("spread-extra-%d", i)
		if _, err := bed.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bed.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	// A config whose point is in the window's middle, so the wait is long
	// enough to look into and short enough to wait for.
	target := ""
	for i := range 100 {
		name := fmt.Sprintf("rendered-spread-b%d", i)
		if p := daemon.SpreadPoint("spread", name); p >= 0.4 && p <= 0.7 {
			target = name
			break
		}
	}
	if target == "" {
		t.Fatal("no config name with its point in [0.4, 0.7] among 100")
	}
	config(t, "rendered-spread-a", ign(nil))
	config(t, target, ign(map[string]string{"/etc/spread.conf": "spread\n"}))
	n, log := nodeOpts(t, "spread", "rendered-spread-a",
		testbed.NodeOptions{ExtraArgs: []string{"--update-spread", perNode.String()}})
	from := log.Len()
	start := time.Now()
	if err := n.SetDesired(ctx, target); err != nil {
		t.Fatal(err)
	}
	startsIn, nodes := spreadLogged(ctx, t, n)
	window := time.Duration(nodes-1) * perNode
	if want := time.Duration(daemon.SpreadPoint("spread", target) * float64(window)); nodes < 11 ||
		(startsIn-want).Abs() > time.Millisecond {
		t.Fatalf("spread: starts in %v of %d nodes, want at least 11 nodes and %v", startsIn, nodes, want)
	}
	// Halfway through the wait nothing is written yet.
	time.Sleep(time.Until(start.Add(startsIn / 2)))
	if time.Since(start) < startsIn {
		if got := log.Transitions(from); len(got) > 0 {
			t.Fatalf("status written during the spread (%v of %v): %v", time.Since(start), startsIn, got)
		}
		if c := log.Condition("Updated"); c == nil || c.Status != "True" {
			t.Fatalf("Updated during the spread: %+v, want True at the config the node runs", c)
		}
	}
	if err := waitCurrent(ctx, log, target); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < startsIn {
		t.Fatalf("updated after %v, before its start at %v", took, startsIn)
	}
	if got := log.Transitions(from); len(got) == 0 || got[0] != "Updated=False" || got[len(got)-1] != "Updated=True" {
		t.Fatalf("transitions %v: want an update from Updated=False to Updated=True", got)
	}
	if got := readNodeFile(t, n, "/etc/spread.conf"); got != "spread\n" {
		t.Errorf("file contents %q", got)
	}
}

var spreadLine = regexp.MustCompile(`Spreading the start of the update.*"startsIn": "([^"]+)", "nodes": (\d+)`)

// spreadLogged waits for the daemon's line that puts off its update and
// returns what it says: when the update starts, and of how many nodes.
func spreadLogged(ctx context.Context, t *testing.T, n *testbed.Node) (time.Duration, int) {
	t.Helper()
	for {
		if m := spreadLine.FindStringSubmatch(n.DaemonLog()); m != nil {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				t.Fatal(err)
			}
			nodes, _ := strconv.Atoi(m[2])
			return d, nodes
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no spread logged: %v\n%s", ctx.Err(), n.DaemonLog())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
