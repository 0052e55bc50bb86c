package cluster

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/faultpoint"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// pauseMidWrite is where the daemon waits for its SIGTERM: after the first
// file of the write is renamed into place, the journal open and the other
// files not all written.
const pauseMidWrite = "file-written:1"

// deleteMidWrite deletes the daemon's pod while its update is inside the
// write step. The test-only pause (faultpoint.PauseEnvVar, set on the
// DaemonSet with `kubectl set env`, which rolls out new pods) holds the
// daemon there until the kubelet's SIGTERM lands; the daemon then finishes
// the write, saves its progress record and exits within the grace period,
// and the DaemonSet's new pod takes the update up at its post action and
// completes it: no journal and no temporary file left, the files as
// desired, the node uncordoned and Updated, and the conditions those of an
// undisturbed update that needs no reboot. files is the node's config
// before; changed is what config changes, which must need nothing on the
// bed's containerd nodes (CRI-O's registries.d files). The pause stays armed
// on the DaemonSet (a later write of the bed would stop there): a test that
// runs after it calls disarmPause.
func deleteMidWrite(ctx context.Context, t *testing.T, n *testbed.KubeNode, log *testbed.StatusLog,
	files, changed map[string]string, extra string) {
	t.Helper()
	begin := time.Now()
	want := map[string]string{}
	for p, c := range files {
		want[p] = c
	}
	for p, c := range changed {
		want[p] = c
	}
	config := renderConfig(ctx, t, testbed.Ignition(want, extra))
	if out, err := bed.Kubectl(ctx, "set", "env", "-n", testbed.Namespace, "ds/"+testbed.DaemonSetName,
		faultpoint.PauseEnvVar+"="+pauseMidWrite); err != nil {
		t.Fatalf("kubectl set env: %v\n%s", err, out)
	}
	if out, err := bed.Kubectl(ctx, "rollout", "status", "-n", testbed.Namespace, "ds/"+testbed.DaemonSetName,
		"--timeout=3m"); err != nil {
		t.Fatalf("kubectl rollout status: %v\n%s", err, out)
	}
	reloads, _ := n.Sys.CRIOReloads()
	boots := n.Sys.Boots()
	old := daemonPod(ctx, t, n.Name)
	daemonLog := followLog(ctx, t, n.Name, old)
	from := log.Len()
	setDesired(ctx, t, map[string]*testbed.KubeNode{n.Name: n}, config)
	daemonLog.waitLine(t, "pausing at file-written", 2*time.Minute)
	if c := log.Condition("AppliedFilesAndOS"); c == nil || c.Status != metav1.ConditionUnknown {
		t.Errorf("node %s: paused mid-write with AppliedFilesAndOS %+v, want Unknown", n.Name, c)
	}
	if txns := journals(t, n); len(txns) != 1 {
		t.Errorf("node %s: paused mid-write with journals %v, want the write's one", n.Name, txns)
	}
	deleted := time.Now()
	if err := bed.Kube.CoreV1().Pods(testbed.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	daemonLog.waitLine(t, "SIGTERM received; going on from file-written", time.Minute)
	daemonLog.waitLine(t, "\tStopped\t", time.Minute)
	t.Logf("node %s: pod %s deleted mid-write; its daemon finished the write and stopped %s after the delete",
		n.Name, old.Name, time.Since(deleted).Round(10*time.Millisecond))
	pod := waitNewDaemonPod(ctx, t, n.Name, old)
	if err := waitCurrent(ctx, log, from, config); err != nil {
		t.Fatalf("node %s: after pod %s was deleted mid-write: %v", n.Name, old.Name, err)
	}
	// The delete shows in no condition: the write ran once, to its end.
	wantSeq(t, n.Name, log.Transitions(from), runtimeSequence)
	t.Logf("node %s: %s completed by pod %s, %s after the delete (%s with the DaemonSet's rollout)", n.Name, config,
		pod.Name, time.Since(deleted).Round(100*time.Millisecond), time.Since(begin).Round(100*time.Millisecond))
	checkConverged(ctx, t, n, want, changed)
	if c, _ := n.Sys.CRIOReloads(); c != reloads {
		t.Errorf("node %s: CRI-O reloads %d, want still %d (registries.d is CRI-O's: nothing to do on a containerd node)",
			n.Name, c, reloads)
	}
	if b := n.Sys.Boots(); b != boots {
		t.Errorf("node %s: boots %d, want still %d", n.Name, b, boots)
	}
}

// disarmPause takes deleteMidWrite's pause off the DaemonSet (a no-op when
// it is not set), for a test that runs after it on other nodes.
func disarmPause(ctx context.Context, t *testing.T) {
	t.Helper()
	if out, err := bed.Kubectl(ctx, "set", "env", "-n", testbed.Namespace, "ds/"+testbed.DaemonSetName,
		faultpoint.PauseEnvVar+"-"); err != nil {
		t.Fatalf("kubectl set env %s-: %v\n%s", faultpoint.PauseEnvVar, err, out)
	}
}

// checkConverged checks that node n has the files of want, no open journal,
// no temporary file beside the files of changed, and is uncordoned.
func checkConverged(ctx context.Context, t *testing.T, n *testbed.KubeNode, want, changed map[string]string) {
	t.Helper()
	for p, c := range want {
		if got, err := os.ReadFile(filepath.Join(n.Sys.Root, p)); err != nil || string(got) != c {
			t.Errorf("node %s: %s = %q (%v), want %q", n.Name, p, got, err, c)
		}
	}
	if txns := journals(t, n); len(txns) != 0 {
		t.Errorf("node %s: journals left: %v", n.Name, txns)
	}
	dirs := map[string]bool{}
	for p := range changed {
		dirs[filepath.Dir(p)] = true
	}
	for d := range dirs {
		entries, err := os.ReadDir(filepath.Join(n.Sys.Root, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".nodeconfd-tmp") {
				t.Errorf("node %s: temporary file left: %s/%s", n.Name, d, e.Name())
			}
		}
	}
	if node, err := bed.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err != nil || node.Spec.Unschedulable {
		t.Errorf("node %s left cordoned (%v)", n.Name, err)
	}
}

// journals lists the node's open undo journals.
func journals(t *testing.T, n *testbed.KubeNode) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(n.Sys.Root, "var/lib/nodeconfd/txn"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// podLog is the log of a pod's container, followed (kubectl logs -f).
type podLog struct {
	node  string
	lines <-chan string
	seen  []string
}

// followLog streams the log of pod's container, line by line, until the
// container ends or ctx does.
func followLog(ctx context.Context, t *testing.T, node string, pod *corev1.Pod) *podLog {
	t.Helper()
	stream, err := bed.Kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatalf("following the log of pod %s: %v", pod.Name, err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		defer stream.Close()
		sc := bufio.NewScanner(stream)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return &podLog{node: node, lines: lines}
}

// waitLine reads lines until one contains want.
func (l *podLog) waitLine(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				t.Fatalf("node %s: the daemon's log ended without a line with %q; it reads:\n%s",
					l.node, want, strings.Join(l.seen, "\n"))
			}
			l.seen = append(l.seen, line)
			if strings.Contains(line, want) {
				return
			}
		case <-timer.C:
			t.Fatalf("node %s: no line with %q in the daemon's log within %s; it reads:\n%s",
				l.node, want, timeout, strings.Join(l.seen, "\n"))
		}
	}
}
