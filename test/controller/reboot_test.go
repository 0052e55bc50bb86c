package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

const (
	annRebootRequested = "nodeconfd.io/reboot-requested"
	annRebootGranted   = "nodeconfd.io/reboot-granted"
)

// rebootOnRequest: the reboot-required sentinel on two workers of a pool
// with one place (kured's job): each asks, is granted in turn by the
// controller, drains, reboots once and passes the health gate, never both
// at once (the sampler); the sentinel files, the requests and the grants
// are gone after, and the pool's config is unchanged.
func rebootOnRequest(ctx context.Context, t *testing.T, nodes map[string]*testbed.Node) {
	t.Helper()
	config := pool(ctx, t, "worker").Spec.Configuration.Name
	// Not w-b1: its kubelet was stopped (notReadyHolds), so no heartbeat
	// would say it is Ready after a reboot.
	asked := []string{"w-a1", "w-a2"}
	boots := map[string]int{}
	for _, name := range asked {
		n := nodes[name]
		boots[name] = n.Sys.Boots()
		p := filepath.Join(n.Sys.Root, "run/reboot-required")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("*** System restart required ***\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, name := range asked {
		waitNode(ctx, t, name, "rebooted on request, request answered", func(n *corev1.Node) bool {
			_, request := n.Annotations[annRebootRequested]
			_, grant := n.Annotations[annRebootGranted]
			return nodes[name].Sys.Boots() > boots[name] && !request && !grant && unavailable(n) == ""
		})
	}
	t.Logf("two reboots on request, one at a time, in %s", time.Since(start).Round(time.Second))
	for _, name := range asked {
		n := nodes[name]
		if b := n.Sys.Boots(); b != boots[name]+1 {
			t.Errorf("node %s booted %d times, want once", name, b-boots[name])
		}
		if _, err := os.Stat(filepath.Join(n.Sys.Root, "run/reboot-required")); !os.IsNotExist(err) {
			t.Errorf("node %s's sentinel is still there: %v", name, err)
		}
		mcn, err := bed.MCfg.MachineconfigurationV1().MachineConfigNodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"RebootedNode", "HealthChecked", "Updated"} {
			if got := mcnCondition(mcn, c); got == nil || got.Status != metav1.ConditionTrue {
				t.Errorf("node %s's %s after its reboot: %+v", name, c, got)
			}
		}
	}
	if got := pool(ctx, t, "worker").Spec.Configuration.Name; got != config {
		t.Errorf("the pool's config changed from %s to %s", config, got)
	}
	requestDuringUpdate(ctx, t, nodes["w-a2"], config)
}

// requestDuringUpdate: an administrator's request on a node that a new
// config has not reached yet is granted only once the node runs it.
func requestDuringUpdate(ctx context.Context, t *testing.T, n *testbed.Node, before string) {
	t.Helper()
	boots := n.Sys.Boots()
	apply(ctx, t, fragment("60-worker-two", map[string]string{"two": "reboot"}))
	next := waitPool(ctx, t, "a new config", func(p *mcfgv1.MachineConfigPool) bool {
		return p.Spec.Configuration.Name != before
	}).Spec.Configuration.Name
	const why = "admin: firmware update"
	if _, err := bed.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+annRebootRequested+`":"`+why+`"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var atGrant *corev1.Node
	waitNode(ctx, t, n.Name, "granted", func(node *corev1.Node) bool {
		atGrant = node
		return node.Annotations[annRebootGranted] == why
	})
	if c, d := atGrant.Annotations[annCurrent], atGrant.Annotations[annDesired]; c != next || d != next {
		t.Errorf("granted while on %s, told %s; want granted once it runs %s", c, d, next)
	}
	waitNode(ctx, t, n.Name, "rebooted after its update", func(node *corev1.Node) bool {
		_, request := node.Annotations[annRebootRequested]
		return !request && n.Sys.Boots() == boots+1 && unavailable(node) == ""
	})
	waitPool(ctx, t, "rollout with the reboot", updatedTo(before))
}

func mcnCondition(mcn *mcfgv1.MachineConfigNode, t string) *metav1.Condition {
	for i := range mcn.Status.Conditions {
		if mcn.Status.Conditions[i].Type == t {
			return &mcn.Status.Conditions[i]
		}
	}
	return nil
}

// waitNode waits until ok holds for the node.
func waitNode(ctx context.Context, t *testing.T, name, what string, ok func(*corev1.Node) bool) {
	t.Helper()
	var last *corev1.Node
	for {
		n, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = n
			if ok(n) {
				return
			}
		}
		select {
		case <-ctx.Done():
			ann := map[string]string{}
			if last != nil {
				ann = last.Annotations
			}
			t.Fatalf("node %s: %s: not in time; annotations %v", name, what, ann)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
