package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

const (
	annDesired = "machineconfiguration.openshift.io/desiredConfig"
	annCurrent = "machineconfiguration.openshift.io/currentConfig"
	annState   = "machineconfiguration.openshift.io/state"
	annFailed  = "machineconfiguration.openshift.io/failedConfig"
	roleLabel  = "machineconfiguration.openshift.io/role"
	workerRole = "node-role.kubernetes.io/worker"
	zoneLabel  = "topology.kubernetes.io/zone"
	// dir holds the test's files: the daemons drain for a change there
	// (no reboot), and the health gate fails while dir/broken exists.
	dir = "/etc/ctl"
	// base is the config the nodes start on.
	base = "rendered-worker-base"
)

// fragment is a worker MachineConfig with files under dir.
func fragment(name string, files map[string]string) *mcfgv1.MachineConfig {
	full := map[string]string{}
	for p, c := range files {
		full[dir+"/"+p] = c
	}
	mc := testbed.MachineConfig(name, testbed.Ignition(full))
	mc.Labels = map[string]string{roleLabel: "worker"}
	return mc
}

// apply creates or replaces a fragment.
func apply(ctx context.Context, t *testing.T, mc *mcfgv1.MachineConfig) {
	t.Helper()
	mcs := bed.MCfg.MachineconfigurationV1().MachineConfigs()
	old, err := mcs.Get(ctx, mc.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = mcs.Create(ctx, mc, metav1.CreateOptions{})
	} else if err == nil {
		mc.ResourceVersion = old.ResourceVersion
		_, err = mcs.Update(ctx, mc, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("applying MachineConfig %s: %v", mc.Name, err)
	}
}

// workers starts the pool's nodes: names[i] in zones[i], registered in
// that order (so oldest first), on base, their daemons gated on dir/broken.
func workers(ctx context.Context, t *testing.T, names, zones []string) map[string]*testbed.Node {
	t.Helper()
	return labelledWorkers(ctx, t, names, zones, nil)
}

// labelledWorkers is workers with more labels on each node (a custom
// pool's role).
func labelledWorkers(ctx context.Context, t *testing.T, names, zones []string, labels map[string]string) map[string]*testbed.Node {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	policy := "nodeDisruptionPolicy:\n  files:\n  - path: " + dir + "/\n    actions: [{type: Drain}]\n"
	if err := os.WriteFile(p, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := bed.CreateConfig(ctx, testbed.MachineConfig(base, testbed.Ignition(nil))); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	nodes := map[string]*testbed.Node{}
	for i, name := range names {
		l := map[string]string{workerRole: "", zoneLabel: zones[i]}
		maps.Copy(l, labels)
		nodes[name] = bed.AddTestNode(ctx, t, name, base, testbed.NodeOptions{
			Labels: l,
			ExtraArgs: []string{"--node-disruption-policy", p, "--health-command", "/usr/bin/test ! -e " + dir + "/broken",
				"--health-timeout", "10s", "--reboot-check-interval", "1s",
				// Every config here is the controller's: each node checks it (on as shipped).
				"--verify-rendered-configs=true"},
		})
	}
	// A node counts as available once its daemon reported it Done, as upstream counts it; the
	// rollout starts from a settled pool, as on a cluster whose daemons ran before.
	for _, name := range names {
		for {
			n, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && unavailable(n) == "" {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("node %s never settled on %s", name, base)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nodes
}

// controllers starts two replicas on a node of their own, with short
// leader election times and the extra flags, stopped when t ends.
func controllers(ctx context.Context, t *testing.T, extra ...string) []*testbed.Controller {
	t.Helper()
	// A control-plane node, where the controller runs (manifests/05-controller.yaml): in the
	// master pool, not the workers' the tests roll out.
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ctl-host",
		Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}
	if _, err := bed.Kube.CoreV1().Nodes().Create(ctx, host, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var out []*testbed.Controller
	for _, name := range []string{"ctl-a", "ctl-b"} {
		c, err := bed.StartController(ctx, name, "ctl-host", append([]string{"--leader-election-lease-duration", "4s",
			"--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "500ms", "--log-format", "json"},
			extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	t.Cleanup(func() {
		for _, c := range out {
			c.Stop()
			if t.Failed() {
				t.Logf("log of controller %s:\n%s", c.Name, c.Log())
			}
		}
	})
	return out
}

// pool reads a pool.
func pool(ctx context.Context, t *testing.T, name string) *mcfgv1.MachineConfigPool {
	t.Helper()
	p, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func condition(p *mcfgv1.MachineConfigPool, typ mcfgv1.MachineConfigPoolConditionType) *mcfgv1.MachineConfigPoolCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// waitPool waits until ok holds for the worker pool.
func waitPool(ctx context.Context, t *testing.T, what string, ok func(*mcfgv1.MachineConfigPool) bool) *mcfgv1.MachineConfigPool {
	t.Helper()
	for {
		p := pool(ctx, t, "worker")
		if ok(p) {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for the worker pool: %s; its status:\n%s", what, describe(p))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// updatedTo says whether the pool finished rolling out a config other than
// not.
func updatedTo(not string) func(*mcfgv1.MachineConfigPool) bool {
	return func(p *mcfgv1.MachineConfigPool) bool {
		c := condition(p, mcfgv1.MachineConfigPoolUpdated)
		return p.Spec.Configuration.Name != "" && p.Spec.Configuration.Name != not &&
			p.Status.Configuration.Name == p.Spec.Configuration.Name && c != nil && c.Status == corev1.ConditionTrue &&
			p.Status.UpdatedMachineCount == p.Status.MachineCount
	}
}

func describe(p *mcfgv1.MachineConfigPool) string {
	data, _ := json.MarshalIndent(map[string]any{"spec.configuration": p.Spec.Configuration.Name, "status": p.Status}, "", "  ")
	return string(data)
}

// setPaused pauses or resumes the worker pool.
func setPaused(ctx context.Context, t *testing.T, paused bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"paused":%t}}`, paused)
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Patch(ctx, "worker", types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// sampler looks at the nodes every 200 ms: how many are unavailable as
// upstream counts them, what the pool's status says, and when each node
// was first seen told each config.
type sampler struct {
	names []string
	mu    sync.Mutex
	max   int
	bad   []string
	told  map[string]map[string]time.Time // config → node → first seen
}

func sample(ctx context.Context, t *testing.T, names []string) *sampler {
	s := &sampler{names: names, told: map[string]map[string]time.Time{}}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for sctx.Err() == nil {
			s.once(sctx)
			select {
			case <-sctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *sampler) once(ctx context.Context) {
	list, err := bed.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: workerRole})
	if err != nil {
		return
	}
	p, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, "worker", metav1.GetOptions{})
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var down []string
	for _, n := range list.Items {
		if why := unavailable(&n); why != "" {
			down = append(down, n.Name+" "+why)
		}
		d := n.Annotations[annDesired]
		if s.told[d] == nil {
			s.told[d] = map[string]time.Time{}
		}
		if _, ok := s.told[d][n.Name]; !ok {
			s.told[d][n.Name] = time.Now()
		}
	}
	if len(down) > s.max {
		s.max = len(down)
	}
	if len(down) > 1 {
		s.bad = append(s.bad, fmt.Sprintf("%s: %d unavailable: %s", time.Now().Format("15:04:05.000"), len(down), strings.Join(down, ", ")))
	}
	if p.Status.UnavailableMachineCount > 1 || (p.Status.MachineCount != 0 && p.Status.MachineCount != int32(len(s.names))) {
		s.bad = append(s.bad, fmt.Sprintf("%s: pool status: machineCount %d unavailable %d (%s)", time.Now().Format("15:04:05.000"),
			p.Status.MachineCount, p.Status.UnavailableMachineCount, updatingMessage(p)))
	}
}

// unavailable is why a node counts against maxUnavailable ("" if it does not).
func unavailable(n *corev1.Node) string {
	switch {
	case n.Spec.Unschedulable:
		return "unschedulable"
	case n.Annotations[annDesired] != n.Annotations[annCurrent]:
		return "updating"
	case n.Annotations[annState] != "Done":
		return "state " + n.Annotations[annState]
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return "NotReady"
		}
	}
	return ""
}

// order is the nodes in the order they were told config.
func (s *sampler) order(config string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.told[config] {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return s.told[config][out[i]].Before(s.told[config][out[j]]) })
	return out
}

// check fails t if two nodes were ever unavailable at once.
func (s *sampler) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bad) > 0 {
		t.Errorf("maxUnavailable 1 not held:\n%s", strings.Join(s.bad, "\n"))
	}
}

func updatingMessage(p *mcfgv1.MachineConfigPool) string {
	if c := condition(p, mcfgv1.MachineConfigPoolUpdating); c != nil {
		return c.Message
	}
	return ""
}
