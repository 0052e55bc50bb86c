package controller

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/controller/migrate"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// The shipped worker pool (maxUnavailable 1) on three workers in two
// zones, under two controller replicas: the first render rolls out zone by
// zone, oldest first, never two nodes unavailable at once (sampled every
// 200 ms); two fragments changed give one new rendered config, rolled out
// the same way while the leader is killed after its first handoff (the
// other replica takes over; no node is handed the config twice); a paused
// pool holds; a NotReady node holds the pool; a bad fragment stops it
// (RenderDegraded) with nothing handed; a config that fails the health gate
// on its first node never reaches the others.
func TestPoolRollout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	names := []string{"w-a1", "w-a2", "w-b1"}
	// Registered b1 first: zone order must win over age.
	nodes := workers(ctx, t, []string{"w-b1", "w-a1", "w-a2"}, []string{"zone-b", "zone-a", "zone-a"})
	s := sample(ctx, t, names)
	t.Cleanup(func() { s.check(t) }) // also when a step fails: what the samples saw
	oldSlot := oldBudgetLease(ctx, t)
	slo := startSLOTarget(ctx, t)
	ctls := controllers(ctx, t, "--prometheus-url", slo.prom.URL)
	waitGone(ctx, t, oldSlot)

	apply(ctx, t, fragment("50-worker-one", map[string]string{"one": "1"}))
	apply(ctx, t, fragment("60-worker-two", map[string]string{"two": "1"}))
	p := waitPool(ctx, t, "first rollout", updatedTo(""))
	first := p.Spec.Configuration.Name
	if !strings.HasPrefix(first, "rendered-worker-") || len(p.Spec.Configuration.Source) != 2 {
		t.Fatalf("rendered %q from %v", first, p.Spec.Configuration.Source)
	}
	if got := s.order(first); !reflect.DeepEqual(got, []string{"w-a1", "w-a2", "w-b1"}) {
		t.Errorf("first rollout order %v, want zone-a oldest first, then zone-b", got)
	}
	if p.Status.MachineCount != 3 || p.Status.ReadyMachineCount != 3 || p.Status.UnavailableMachineCount != 0 {
		t.Errorf("pool counts: %s", describe(p))
	}

	// Two fragments changed at once: one rendered config. The leader dies
	// after its first handoff.
	apply(ctx, t, fragment("50-worker-one", map[string]string{"one": "2"}))
	apply(ctx, t, fragment("60-worker-two", map[string]string{"two": "2"}))
	// The controller may render between the two writes (a config with one
	// change, handed out, then replaced): the one awaited has both.
	p = waitPool(ctx, t, "a second rendered config, of both changes", func(p *mcfgv1.MachineConfigPool) bool {
		return p.Spec.Configuration.Name != first && rendersFiles(ctx, t, p.Spec.Configuration.Name,
			map[string]string{dir + "/one": "2", dir + "/two": "2"})
	})
	second := p.Spec.Configuration.Name
	waitTold(ctx, t, s, second, 1)
	leader := killLeader(ctx, t, ctls)
	p = waitPool(ctx, t, "second rollout", updatedTo(first))
	if p.Spec.Configuration.Name != second {
		t.Fatalf("a third config %s was rendered from two changes", p.Spec.Configuration.Name)
	}
	if got := s.order(second); !reflect.DeepEqual(got, []string{"w-a1", "w-a2", "w-b1"}) {
		t.Errorf("second rollout order %v", got)
	}
	handedOnce(t, ctls, second, names)
	t.Logf("leader %s killed mid-rollout; the other replica finished it", leader)

	// A paused pool holds; unpaused it goes on.
	setPaused(ctx, t, true)
	apply(ctx, t, fragment("50-worker-one", map[string]string{"one": "3"}))
	p = waitPool(ctx, t, "paused", func(p *mcfgv1.MachineConfigPool) bool {
		c := condition(p, mcfgv1.MachineConfigPoolUpdating)
		return p.Spec.Configuration.Name != second && c != nil && strings.Contains(c.Message, "paused")
	})
	third := p.Spec.Configuration.Name
	time.Sleep(3 * time.Second)
	if n := len(s.order(third)); n != 0 {
		t.Fatalf("paused pool handed %s to %d nodes", third, n)
	}
	setPaused(ctx, t, false)
	waitPool(ctx, t, "rollout after the pause", updatedTo(second))
	fourth := drainableFirst(ctx, t, s, third)

	notReadyHolds(ctx, t, s, nodes["w-b1"], fourth)
	rebootOnRequest(ctx, t, nodes)
	badFragmentStops(ctx, t, s)
	healthGateStops(ctx, t, s)
	sloBreachStops(ctx, t, s, slo)
}

// notReadyHolds: a NotReady node fills the pool's one place, so a new
// config waits until it is Ready again.
func notReadyHolds(ctx context.Context, t *testing.T, s *sampler, n *testbed.Node, current string) {
	t.Helper()
	node := n.Name
	n.Kubelet.Stop() // else its heartbeat sets Ready again
	setReady(ctx, t, node, corev1.ConditionUnknown)
	apply(ctx, t, fragment("50-worker-one", map[string]string{"one": "4"}))
	p := waitPool(ctx, t, "held by the NotReady node", func(p *mcfgv1.MachineConfigPool) bool {
		c := condition(p, mcfgv1.MachineConfigPoolUpdating)
		return p.Spec.Configuration.Name != current && c != nil && strings.Contains(c.Message, node)
	})
	next := p.Spec.Configuration.Name
	time.Sleep(3 * time.Second)
	if got := s.order(next); len(got) != 0 {
		t.Fatalf("with %s NotReady, %v were handed %s", node, got, next)
	}
	setReady(ctx, t, node, corev1.ConditionTrue)
	waitPool(ctx, t, "rollout after the node is Ready", updatedTo(current))
}

// badFragmentStops: a fragment the daemons would refuse stops the pool,
// naming it, and nothing is handed out.
func badFragmentStops(ctx context.Context, t *testing.T, s *sampler) {
	t.Helper()
	before := pool(ctx, t, "worker").Spec.Configuration.Name
	bad := fragment("70-worker-bad", map[string]string{"ok": "x"})
	bad.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/ctl/x","contents":{"source":"http://example.com/x"}}]}}`)
	apply(ctx, t, bad)
	p := waitPool(ctx, t, "RenderDegraded", func(p *mcfgv1.MachineConfigPool) bool {
		c := condition(p, mcfgv1.MachineConfigPoolRenderDegraded)
		return c != nil && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "70-worker-bad")
	})
	if p.Spec.Configuration.Name != before {
		t.Errorf("a bad fragment changed the pool's config to %s", p.Spec.Configuration.Name)
	}
	if err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Delete(ctx, "70-worker-bad", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPool(ctx, t, "RenderDegraded cleared", func(p *mcfgv1.MachineConfigPool) bool {
		c := condition(p, mcfgv1.MachineConfigPoolRenderDegraded)
		return c != nil && c.Status == corev1.ConditionFalse
	})
	_ = s
}

// healthGateStops: a config that fails the health gate on the first node
// is rolled back there and never handed to the others.
func healthGateStops(ctx context.Context, t *testing.T, s *sampler) {
	t.Helper()
	before := pool(ctx, t, "worker").Spec.Configuration.Name
	apply(ctx, t, fragment("80-worker-broken", map[string]string{"broken": "yes"}))
	p := waitPool(ctx, t, "stopped by the health gate", func(p *mcfgv1.MachineConfigPool) bool {
		c := condition(p, mcfgv1.MachineConfigPoolUpdating)
		return p.Spec.Configuration.Name != before && c != nil && strings.Contains(c.Message, "health gate")
	})
	broken := p.Spec.Configuration.Name
	time.Sleep(5 * time.Second)
	if got := s.order(broken); len(got) != 1 || got[0] != "w-a1" {
		t.Fatalf("config failing the health gate handed to %v, want only w-a1", got)
	}
	n, err := bed.Kube.CoreV1().Nodes().Get(ctx, "w-a1", metav1.GetOptions{})
	if err != nil || n.Annotations[annFailed] != broken {
		t.Fatalf("w-a1 failedConfig %q, want %s (%v)", n.Annotations[annFailed], broken, err)
	}
}

// waitTold waits until n nodes were told config.
func waitTold(ctx context.Context, t *testing.T, s *sampler, config string, n int) {
	t.Helper()
	for len(s.order(config)) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%s never handed to %d nodes", config, n)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// killLeader SIGKILLs the replica the leader Lease names, as a crash or a
// lost node would stop it (no release: the other waits out the lease).
func killLeader(ctx context.Context, t *testing.T, ctls []*testbed.Controller) string {
	t.Helper()
	l, err := bed.Kube.CoordinationV1().Leases(testbed.Namespace).Get(ctx, "nodeconfd-controller", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		t.Fatalf("reading the leader Lease: %v", err)
	}
	for _, c := range ctls {
		if c.Name == *l.Spec.HolderIdentity {
			c.Kill()
			return c.Name
		}
	}
	t.Fatalf("leader %q is none of the replicas", *l.Spec.HolderIdentity)
	return ""
}

// handedOnce checks, from both replicas' logs, that each node was handed
// config once.
func handedOnce(t *testing.T, ctls []*testbed.Controller, config string, nodes []string) {
	t.Helper()
	count := map[string]int{}
	for _, c := range ctls {
		for _, line := range strings.Split(c.Log(), "\n") {
			var e struct{ Msg, Node, Config string }
			if json.Unmarshal([]byte(line), &e) == nil && e.Msg == "Handed a node the pool's config" && e.Config == config {
				count[e.Node]++
			}
		}
	}
	for _, n := range nodes {
		if count[n] != 1 {
			t.Errorf("node %s handed %s %d times (logs of both replicas), want once", n, config, count[n])
		}
	}
}

func setReady(ctx context.Context, t *testing.T, node string, status corev1.ConditionStatus) {
	t.Helper()
	n, err := bed.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = status
			n.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	if _, err := bed.Kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// oldBudgetLease creates a slot of the daemons' old disruption budget as
// they wrote it, which the controller's start removes.
func oldBudgetLease(ctx context.Context, t *testing.T) string {
	t.Helper()
	holder, secs := "w-a1", int32(900)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeconfd-disruption-0", Namespace: testbed.Namespace,
			Labels: map[string]string{migrate.BudgetLabel: "nodeconfd-disruption"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs},
	}
	if _, err := bed.Kube.CoordinationV1().Leases(testbed.Namespace).Create(ctx, l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return l.Name
}

// waitGone waits until the Lease is deleted.
func waitGone(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	for {
		_, err := bed.Kube.CoordinationV1().Leases(testbed.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the old budget's Lease %s is still there", name)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// rendersFiles reports whether the rendered config name holds files with
// those contents.
func rendersFiles(ctx context.Context, t *testing.T, name string, files map[string]string) bool {
	t.Helper()
	if !strings.HasPrefix(name, "rendered-worker-") {
		return false
	}
	mc, err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	cfg, err := plan.Parse(mc)
	if err != nil {
		t.Fatalf("rendered config %s: %v", name, err)
	}
	for path, want := range files {
		if f, ok := cfg.Files[path]; !ok || string(f.Contents) != want {
			return false
		}
	}
	return true
}
