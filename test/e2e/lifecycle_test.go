package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/daemon/lifecycle"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// TestNodeLifecycleConditions: with --node-lifecycle-conditions, one update that drains and
// reboots a real node sets the Node lifecycle conditions of Kubernetes 1.37 (its API server
// runs with the NodeLifecycleConditions gate on) in order, each write seen by a watch of the
// Node, and clears them when the node is back in service. The daemon writes them with its
// pod's token, through the RBAC and admission policies of manifests/.
func TestNodeLifecycleConditions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wantGateOn(ctx, t)
	config(t, "rendered-lc-a", ign(nil))
	config(t, "rendered-lc-b", ign(map[string]string{"/etc/motd.d/lifecycle": "updated by nodeconfd\n"}))
	n, log := nodeOpts(t, "lc", "rendered-lc-a", testbed.NodeOptions{ExtraArgs: []string{"--node-lifecycle-conditions"}})
	podsOn(t, "lc", 2)
	rec := recordLifecycle(ctx, t, "lc")
	if err := n.SetDesired(ctx, "rendered-lc-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-lc-b"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"MaintenancePlanned=True",
		"DrainInProgress=True",
		"DrainInProgress=False Drained=True",
		"MaintenancePlanned=False MaintenanceInProgress=True",
		"Drained=False MaintenanceInProgress=False",
	}
	got := rec.waitFor(ctx, len(want))
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("lifecycle condition writes, one per Node update seen:\n got: %s\nwant: %s",
			strings.Join(got, " | "), strings.Join(want, " | "))
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2 (one reboot)", b)
	}
	node := getNode(t, "lc")
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			t.Errorf("the kubelet's Ready condition is %s after the update", c.Status)
		}
	}
	t.Logf("Node lc's conditions after the update: %s", describeConditions(node.Status.Conditions))
}

// wantGateOn checks the bed's API server runs with the NodeLifecycleConditions feature gate on,
// as its own metrics say.
func wantGateOn(ctx context.Context, t *testing.T) {
	t.Helper()
	out, err := bed.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const want = `kubernetes_feature_enabled{name="NodeLifecycleConditions",stage="ALPHA"} 1`
	if !strings.Contains(string(out), want) {
		t.Errorf("the API server's /metrics have no %s", want)
	}
}

// lifecycleLog is what a watch of a Node saw of its lifecycle conditions: per Node update,
// the conditions that changed status, in lifecycle.Types() order.
type lifecycleLog struct {
	mu      sync.Mutex
	changes []string
	seen    chan struct{}
}

func recordLifecycle(ctx context.Context, t *testing.T, name string) *lifecycleLog {
	t.Helper()
	w, err := bed.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	l := &lifecycleLog{seen: make(chan struct{}, 1)}
	go func() {
		defer w.Stop()
		last := map[corev1.NodeConditionType]corev1.ConditionStatus{}
		for ev := range w.ResultChan() {
			node, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			var changed []string
			for _, typ := range lifecycle.Types() {
				for _, c := range node.Status.Conditions {
					if c.Type == typ && last[typ] != c.Status {
						last[typ] = c.Status
						changed = append(changed, string(typ)+"="+string(c.Status))
					}
				}
			}
			if len(changed) == 0 {
				continue
			}
			l.mu.Lock()
			l.changes = append(l.changes, strings.Join(changed, " "))
			l.mu.Unlock()
			select {
			case l.seen <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

// waitFor returns the changes once there are n, or those seen when ctx ends (a short list).
func (l *lifecycleLog) waitFor(ctx context.Context, n int) []string {
	for {
		l.mu.Lock()
		got := append([]string(nil), l.changes...)
		l.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ctx.Done():
			return got
		case <-l.seen:
		}
	}
}

func describeConditions(conds []corev1.NodeCondition) string {
	var s []string
	for _, c := range conds {
		s = append(s, string(c.Type)+"="+string(c.Status)+"("+c.Reason+")")
	}
	return strings.Join(s, " ")
}
