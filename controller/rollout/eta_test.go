package rollout

import (
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// updMCN is a MachineConfigNode whose last update, to current, prepared
// at prep and ended at done (zero: still running, desired its config).
func updMCN(name, current, desired string, prep, done time.Time) *mcfgv1.MachineConfigNode {
	m := mkMCN(name, current, done, "")
	m.Status.ConfigVersion.Desired = desired
	m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: string(mcfgv1.MachineConfigNodeUpdatePrepared),
		Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(prep)})
	return m
}

func TestForecast(t *testing.T) {
	T := corev1.ConditionTrue
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return now.Add(time.Duration(s) * time.Second) }
	old := func(name string, d int) *mcfgv1.MachineConfigNode {
		return updMCN(name, v0, v0, at(-1000), at(-1000+d))
	}
	tests := []struct {
		name     string
		nodes    []*corev1.Node
		mcns     map[string]*mcfgv1.MachineConfigNode
		max      int
		soak     time.Duration
		ok       bool
		finish   time.Time
		perNode  time.Duration
		ofTarget bool
	}{
		{"nothing known to predict from", []*corev1.Node{mkNode("a", v0, v1, ready(T)), mkNode("b", v0, v0, ready(T))},
			map[string]*mcfgv1.MachineConfigNode{}, 1, 0, false, time.Time{}, 0, false},
		{"all updated: no prediction", []*corev1.Node{mkNode("a", v1, v1, ready(T))},
			map[string]*mcfgv1.MachineConfigNode{"a": updMCN("a", v1, v1, at(-100), at(-40))}, 1, 0, false, time.Time{}, time.Minute, true},
		{"first node of the rollout, from the last updates: 3 nodes one at a time",
			[]*corev1.Node{mkNode("a", v0, v1, ready(T)), mkNode("b", v0, v0, ready(T)), mkNode("c", v0, v0, ready(T))},
			map[string]*mcfgv1.MachineConfigNode{"a": old("a", 30), "b": old("b", 40), "c": old("c", 50)},
			1, 0, true, at(120), 40 * time.Second, false}, // a just handed: now+40, then b, c
		{"one done, one updating since 10 s, one to go, with a soak",
			[]*corev1.Node{mkNode("a", v1, v1, ready(T)), mkNode("b", v0, v1, ready(T)), mkNode("c", v0, v0, ready(T))},
			map[string]*mcfgv1.MachineConfigNode{"a": updMCN("a", v1, v1, at(-100), at(-40)), "b": updMCN("b", v0, v1, at(-10), time.Time{}),
				"c": old("c", 5)},
			1, 30 * time.Second, true, at(-10 + 60 + 30 + 60), time.Minute, true},
		{"two slots", []*corev1.Node{mkNode("a", v1, v1, ready(T)), mkNode("b", v0, v1, ready(T)), mkNode("c", v0, v0, ready(T)),
			mkNode("d", v0, v0, ready(T))},
			map[string]*mcfgv1.MachineConfigNode{"a": updMCN("a", v1, v1, at(-100), at(-40))},
			2, 0, true, at(120), time.Minute, true}, // b (just handed) to +60; c now to +60 in the free slot; d +60 to +120
		{"an overdue node ends within the minute", []*corev1.Node{mkNode("a", v1, v1, ready(T)), mkNode("b", v0, v1, ready(T))},
			map[string]*mcfgv1.MachineConfigNode{"a": updMCN("a", v1, v1, at(-100), at(-40)), "b": updMCN("b", v0, v1, at(-600), time.Time{})},
			1, 0, true, at(60), time.Minute, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pool: mkPool("worker", ""), Target: v1, Nodes: tc.nodes, MCNs: tc.mcns, Now: now, Soak: tc.soak}
			e, ok := Forecast(in, tc.max)
			if ok != tc.ok || e.PerNode != tc.perNode || e.OfTarget != tc.ofTarget || (ok && !e.Finish.Equal(tc.finish)) {
				t.Errorf("Forecast = %+v, %v; want finish %v, per node %v (of target %v), %v", e, ok, tc.finish, tc.perNode, tc.ofTarget, tc.ok)
			}
		})
	}
}

func TestStatusSaysTheETA(t *testing.T) {
	T := corev1.ConditionTrue
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	nodes := []*corev1.Node{mkNode("a", v1, v1, ready(T)), mkNode("b", v0, v1, ready(T)), mkNode("c", v0, v0, ready(T))}
	mcns := map[string]*mcfgv1.MachineConfigNode{"a": updMCN("a", v1, v1, now.Add(-100*time.Second), now.Add(-40*time.Second)),
		"b": updMCN("b", v0, v1, now.Add(-10*time.Second), time.Time{})}
	pool := withMax(mkPool("worker", ""), intstr.FromInt32(1))
	in := Input{Pool: pool, Target: v1, Nodes: nodes, MCNs: mcns, Now: now}
	msg := updatingOf(Status(in, nil))
	want := "; expected to finish by 2026-12-06T09:01:50Z (1 updating, 1 to go; about 1m0s per node, the median of the updates to this config of 1 nodes)"
	if !strings.HasSuffix(msg, want) {
		t.Errorf("Updating message %q, want it to end %q", msg, want)
	}
	// The same inputs a few seconds later give the same message: no status write.
	in.Now = now.Add(5 * time.Second)
	if again := updatingOf(Status(in, nil)); again != msg {
		t.Errorf("message moved with the clock: %q then %q", msg, again)
	}
	pool.Spec.Paused = true
	if msg := updatingOf(Status(in, nil)); strings.Contains(msg, "expected") {
		t.Errorf("paused pool predicts: %q", msg)
	}
}

func updatingOf(st mcfgv1.MachineConfigPoolStatus) string {
	for _, c := range st.Conditions {
		if c.Type == mcfgv1.MachineConfigPoolUpdating {
			return c.Message
		}
	}
	return ""
}
