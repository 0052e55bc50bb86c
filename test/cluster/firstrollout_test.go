package cluster

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// The first rollout's files: registries.d changes reload the runtime
// (no drain, no reboot), so that the test measures the rollout's pacing
// rather than three reboots.
const (
	workerFile = "/etc/containers/registries.d/first-worker.yaml"
	infraFile  = "/etc/containers/registries.d/first-infra.yaml"
)

// TestFirstRollout is the README's first rollout on a fresh cluster: three
// real nodes registered as kubeadm registers them (no role labels, no
// config, no state), manifests/ as shipped, one MachineConfig fragment
// labelled worker applied with kubectl. The controller renders the worker
// pool's config and hands it out one node at a time (maxUnavailable 1,
// sampled every 200 ms), each node only after its daemon registered its
// MachineConfigNode; the pool counts them. Then a custom pool infra, made
// as the OpenShift documentation makes one, takes one node: it ends on the
// infra pool's config with both fragments, its MachineConfigNode names
// infra, the workers never get the infra fragment. Last, the node is
// deleted and its MachineConfigNode goes with it.
func TestFirstRollout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	names := []string{"first-a", "first-b", "first-c"}
	disarmPause(ctx, t) // TestDaemonSetOnRealNodes's, run before
	kubectlApply(ctx, t, fragmentYAML("99-worker-first", "worker", workerFile, "docker:\n  first.example: {}\n"))

	s := startSampling(names)
	nodes, _ := startNodes(ctx, t, "", names...)
	controllerRuns(ctx, t, names[0])
	target := waitPoolRendered(ctx, t, "worker", "99-worker-first")
	waitRunning(ctx, t, names, target)
	s.stop(t, 1)
	waitPoolCounts(ctx, t, "worker", 3)
	etaDone(ctx, t, "worker", target, names) // eta_test.go
	for _, name := range names {
		if got := readNodeFile(t, nodes[name], workerFile); got != "docker:\n  first.example: {}\n" {
			t.Errorf("node %s: %s = %q, want the fragment's", name, workerFile, got)
		}
		if b := nodes[name].Sys.Boots(); b != 1 {
			t.Errorf("node %s: boots = %d, want 1 (a registries.d change reloads, no reboot)", name, b)
		}
		if n := strings.Count(podLogs(ctx, *daemonPod(ctx, t, name)), "Node has no desiredConfig annotation yet; waiting"); n > 2 {
			t.Errorf("node %s: its daemon said %d times that it waits for a config, want once (twice when the pool rendered later)", name, n)
		}
	}
	showPools(ctx, t)

	infra := names[2]
	customPool(ctx, t, nodes, infra, names[:2])
	showPools(ctx, t)
	nodeDeletedTakesMCN(ctx, t, nodes[infra])
}

// fragmentYAML is a MachineConfig of role writing one file, as an
// administrator writes one.
func fragmentYAML(name, role, path, content string) string {
	return `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: ` + name + `
  labels:
    machineconfiguration.openshift.io/role: ` + role + `
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      files:
      - path: ` + path + `
        mode: 420
        contents: {source: "data:,` + url.PathEscape(content) + `"}
`
}

// kubectlApply applies a manifest with kubectl, as the README does.
func kubectlApply(ctx context.Context, t *testing.T, manifest string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := bed.Kubectl(ctx, "apply", "-f", f); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// waitPoolRendered waits for the controller to render the pool with the
// fragment and returns its rendered config's name.
func waitPoolRendered(ctx context.Context, t *testing.T, pool, fragment string) string {
	t.Helper()
	var name string
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		name = p.Spec.Configuration.Name
		return strings.HasPrefix(name, "rendered-"+pool+"-") && slices.ContainsFunc(p.Spec.Configuration.Source,
			func(r corev1.ObjectReference) bool { return r.Name == fragment }), nil
	})
	if err != nil {
		t.Fatalf("waiting for the controller to render pool %s with %s: %v", pool, fragment, err)
	}
	return name
}

// waitRunning waits until every node runs config, done.
func waitRunning(ctx context.Context, t *testing.T, names []string, config string) {
	t.Helper()
	begin := time.Now()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			a := n.Annotations
			if a[annCurrent] != config || a[annDesired] != config || a[annState] != "Done" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		out, _ := bed.Kubectl(context.Background(), "get", "mcp,mcn", "-o", "wide")
		t.Fatalf("waiting for nodes %v to run %s: %v\n%s", names, config, err, out)
	}
	t.Logf("%s rolled out to %d nodes by the controller in %s", config, len(names), time.Since(begin).Round(100*time.Millisecond))
}

// waitPoolCounts waits for the pool's status to count n nodes, all updated
// and ready, none unavailable or degraded, and Updated True.
func waitPoolCounts(ctx context.Context, t *testing.T, pool string, n int32) {
	t.Helper()
	var st mcfgv1.MachineConfigPoolStatus
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st = p.Status
		updated := false
		for _, c := range st.Conditions {
			updated = updated || c.Type == mcfgv1.MachineConfigPoolUpdated && c.Status == corev1.ConditionTrue
		}
		return updated && st.MachineCount == n && st.UpdatedMachineCount == n && st.ReadyMachineCount == n &&
			st.UnavailableMachineCount == 0 && st.DegradedMachineCount == 0, nil
	})
	if err != nil {
		t.Errorf("pool %s: status %+v, want %d nodes all updated and ready: %v", pool, st, n, err)
	}
}

// showPools logs what the README tells an administrator to look at.
func showPools(ctx context.Context, t *testing.T) {
	for _, args := range [][]string{{"get", "machineconfigpools"}, {"get", "machineconfignodes", "-o", "wide"}} {
		out, err := bed.Kubectl(ctx, args...)
		if err != nil {
			t.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	}
}

func readNodeFile(t *testing.T, n *testbed.KubeNode, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.Sys.Root, path))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// sampling follows the nodes' availability, as the controller counts it,
// every 200 ms.
type sampling struct {
	names  []string
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	most   int
	worst  string
	early  []string // nodes handed a config before their daemon registered
	checks int
}

func startSampling(names []string) *sampling {
	s := &sampling{names: names, done: make(chan struct{})}
	s.wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
				s.sample()
			}
		}
	})
	return s
}

// sample counts the unavailable nodes: not ready, cordoned, or told a
// config they do not run yet; and notes a node told a config whose
// MachineConfigNode is not there (listed after the Nodes, so it would be
// there had it been created before the handoff).
func (s *sampling) sample() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var down []string
	var told []string
	for _, name := range s.names {
		n, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue // not registered yet
		}
		a := n.Annotations
		if a[annDesired] != "" {
			told = append(told, name)
		}
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}
		if a[annDesired] != "" && (!ready || n.Spec.Unschedulable || a[annCurrent] != a[annDesired] || a[annState] != "Done") {
			down = append(down, name)
		}
	}
	var early []string
	for _, name := range told {
		if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigNodes().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			early = append(early, name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks++
	if len(down) > s.most {
		s.most, s.worst = len(down), strings.Join(down, ", ")
	}
	s.early = append(s.early, early...)
}

// stop ends the sampling and checks that at most max nodes were
// unavailable at once and none was handed a config before it registered.
func (s *sampling) stop(t *testing.T, max int) {
	t.Helper()
	close(s.done)
	s.wg.Wait()
	t.Logf("%d samples; at most %d nodes unavailable at once (%s)", s.checks, s.most, s.worst)
	if s.most > max {
		t.Errorf("%d nodes unavailable at once (%s), want at most maxUnavailable %d", s.most, s.worst, max)
	}
	if len(s.early) > 0 {
		t.Errorf("nodes handed a config before their daemon registered their MachineConfigNode: %v", s.early)
	}
}
