package rollout

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/render"
)

// want is a status's counts and condition statuses (Updated, Updating,
// Degraded), as upstream's TestCalculateStatus checks them.
type want struct {
	machines, updated, ready, unavailable, degraded int32
	conds                                           [3]corev1.ConditionStatus
}

// TestStatus ports the non-layered cases of upstream's TestCalculateStatus
// (target v1).
func TestStatus(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	tests := []struct {
		name   string
		nodes  []*corev1.Node
		paused bool
		want   want
	}{
		{"0 nodes updated, 0 nodes updating, 0 nodes degraded", []*corev1.Node{
			mkNode("node-0", v0, v0, ready(T)), mkNode("node-1", v0, v0, ready(T)), mkNode("node-2", v0, v0, ready(T)),
		}, false, want{3, 0, 0, 0, 0, [3]corev1.ConditionStatus{F, T, F}}},
		{"0 nodes updated, 1 node updating, 0 nodes degraded", []*corev1.Node{
			mkNode("node-0", v0, v1, ready(T)), mkNode("node-1", v0, v0, ready(T)), mkNode("node-2", v0, v0, ready(T)),
		}, false, want{3, 0, 0, 1, 0, [3]corev1.ConditionStatus{F, T, F}}},
		{"0 nodes updated, 0 nodes updating, 0 nodes degraded, pool paused", []*corev1.Node{
			mkNode("node-0", v0, v1, ready(T)), mkNode("node-1", v0, v0, ready(T)), mkNode("node-2", v0, v0, ready(T)),
		}, true, want{3, 0, 0, 1, 0, [3]corev1.ConditionStatus{F, F, F}}},
		{"0 nodes updated, 1 node updating (not ready), 0 nodes degraded", []*corev1.Node{
			mkNode("node-0", v0, v1, ready(F)), mkNode("node-1", v0, v0, ready(T)), mkNode("node-2", v0, v0, ready(T)),
		}, false, want{3, 0, 0, 1, 0, [3]corev1.ConditionStatus{F, T, F}}},
		{"0 nodes updated, 1 node updating, 1 node degraded", []*corev1.Node{
			mkNode("node-0", v0, v1, ready(F), state(names.StateDegraded)), mkNode("node-1", v0, v0, ready(T)), mkNode("node-2", v0, v0, ready(T)),
		}, false, want{3, 0, 0, 1, 1, [3]corev1.ConditionStatus{F, T, T}}},
		{"1 node updated, 1 node updating, 0 nodes degraded", []*corev1.Node{
			mkNode("node-0", v1, v1, ready(F)), mkNode("node-1", v0, v0, ready(T)), mkNode("node-2", v0, v0, ready(T)),
		}, false, want{3, 1, 0, 1, 0, [3]corev1.ConditionStatus{F, T, F}}},
		{"1 node updated, 2 nodes updating, 0 nodes degraded", []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v0, v1, ready(T)), mkNode("node-2", v0, v1, ready(T)),
		}, false, want{3, 1, 1, 2, 0, [3]corev1.ConditionStatus{F, T, F}}},
		{"3 nodes updated, 0 nodes updating, 0 nodes degraded", []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v1, v1, ready(T)), mkNode("node-2", v1, v1, ready(T)),
		}, false, want{3, 3, 3, 0, 0, [3]corev1.ConditionStatus{T, F, F}}},
		{"unreconcilable counts as degraded", []*corev1.Node{
			mkNode("node-0", v0, v1, ready(T), state(names.StateUnreconcilable)), mkNode("node-1", v1, v1, ready(T)),
		}, false, want{2, 1, 1, 0, 1, [3]corev1.ConditionStatus{F, T, T}}},
		{"no nodes: updated", nil, false, want{0, 0, 0, 0, 0, [3]corev1.ConditionStatus{T, F, F}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mkPool("worker", "node-role/worker")
			p.Spec.Paused = tt.paused
			p.Spec.Configuration.Name = v1
			p.Status.Configuration.Name = v0
			st := Status(Input{Pool: p, Target: v1, Nodes: tt.nodes, Now: time.Unix(100, 0)}, nil)
			got := want{st.MachineCount, st.UpdatedMachineCount, st.ReadyMachineCount, st.UnavailableMachineCount, st.DegradedMachineCount,
				[3]corev1.ConditionStatus{condOf(st, mcfgv1.MachineConfigPoolUpdated).Status, condOf(st, mcfgv1.MachineConfigPoolUpdating).Status,
					condOf(st, mcfgv1.MachineConfigPoolDegraded).Status}}
			if got != tt.want {
				t.Errorf("status %+v, want %+v", got, tt.want)
			}
			wantConfig := v0
			if tt.want.conds[0] == T {
				wantConfig = v1
			}
			if st.Configuration.Name != wantConfig {
				t.Errorf("status.configuration %q, want %q", st.Configuration.Name, wantConfig)
			}
		})
	}
}

// TestStatusMessages checks the conditions' messages, reasons and
// transition times.
func TestStatusMessages(t *testing.T) {
	T := corev1.ConditionTrue
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	p := mkPool("worker", "node-role/worker")
	nodes := []*corev1.Node{
		mkNode("node-0", v1, v1, ready(T)),
		mkNode("node-1", v0, v1, ready(T), state(names.StateDegraded), annot(names.Reason, "disk full")),
		mkNode("node-2", v0, v0, ready(T)),
	}
	mcns := map[string]*mcfgv1.MachineConfigNode{"node-0": mkMCN("node-0", v1, t0, "config drift: /etc/foo")}
	in := Input{Pool: p, Target: v1, Nodes: nodes, MCNs: mcns, Now: t0}
	st := Status(in, errors.New("MachineConfig 99-x: spec.config: invalid"))

	checks := []struct {
		t               mcfgv1.MachineConfigPoolConditionType
		status          corev1.ConditionStatus
		reason, message string
	}{
		{mcfgv1.MachineConfigPoolUpdated, corev1.ConditionFalse, "", ""},
		{mcfgv1.MachineConfigPoolUpdating, T, "", "All nodes are updating to MachineConfig " + v1 +
			"; 2 of 3 nodes unavailable (maxUnavailable 1): node-0 NodeDegraded, node-1 failing " + v1 + " (state Degraded)"},
		{mcfgv1.MachineConfigPoolRenderDegraded, T, "", "Failed to render configuration for pool worker: MachineConfig 99-x: spec.config: invalid"},
		{mcfgv1.MachineConfigPoolNodeDegraded, T, "2 nodes are reporting degraded status on sync",
			`Node node-0 is reporting: "config drift: /etc/foo", Node node-1 is reporting: "disk full"`},
		{mcfgv1.MachineConfigPoolDegraded, T, "", `Node node-0 is reporting: "config drift: /etc/foo", Node node-1 is reporting: "disk full"`},
	}
	for _, c := range checks {
		got := condOf(st, c.t)
		if got.Status != c.status || got.Reason != c.reason || got.Message != c.message || !got.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s: got %+v, want %s %q %q at %v", c.t, got, c.status, c.reason, c.message, t0)
		}
	}

	// The same state later changes nothing: no churn.
	p.Status = st
	again := Status(Input{Pool: p, Target: v1, Nodes: nodes, MCNs: mcns, Now: t1}, errors.New("MachineConfig 99-x: spec.config: invalid"))
	if !reflect.DeepEqual(again, st) {
		t.Errorf("a second reconcile changed the status:\n%+v\nwant\n%+v", again, st)
	}

	// The render is fixed: RenderDegraded turns False at t1, the others
	// keep their time; Degraded stays True (nodes) and keeps its time.
	p.Status = st
	fixed := Status(Input{Pool: p, Target: v1, Nodes: nodes, MCNs: mcns, Now: t1}, nil)
	if c := condOf(fixed, mcfgv1.MachineConfigPoolRenderDegraded); c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t1) {
		t.Errorf("RenderDegraded %+v, want False at %v", c, t1)
	}
	if c := condOf(fixed, mcfgv1.MachineConfigPoolDegraded); c.Status != T || !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("Degraded %+v, want True since %v", c, t0)
	}
	if !reflect.DeepEqual(typesOf(fixed), typesOf(st)) {
		t.Errorf("conditions reordered: %v, was %v", typesOf(fixed), typesOf(st))
	}
}

// TestStatusRenderOnly checks that a render error alone degrades the
// pool with its message, and that a paused pool says so.
func TestStatusRenderOnly(t *testing.T) {
	p := mkPool("worker", "node-role/worker")
	p.Spec.Paused = true
	nodes := []*corev1.Node{mkNode("node-0", v0, v0)}
	st := Status(Input{Pool: p, Target: v1, Nodes: nodes, Now: time.Unix(1, 0)}, errors.New("boom"))
	if c := condOf(st, mcfgv1.MachineConfigPoolDegraded); c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, "boom") {
		t.Errorf("Degraded %+v, want True naming the render error", c)
	}
	if c := condOf(st, mcfgv1.MachineConfigPoolNodeDegraded); c.Status != corev1.ConditionFalse {
		t.Errorf("NodeDegraded %+v, want False", c)
	}
	if c := condOf(st, mcfgv1.MachineConfigPoolUpdating); c.Message != "Pool is paused; will not update to MachineConfig "+v1 {
		t.Errorf("Updating %+v, want upstream's paused message", c)
	}
}

func condOf(st mcfgv1.MachineConfigPoolStatus, t mcfgv1.MachineConfigPoolConditionType) mcfgv1.MachineConfigPoolCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return mcfgv1.MachineConfigPoolCondition{Type: t, Status: "missing"}
}

func typesOf(st mcfgv1.MachineConfigPoolStatus) []mcfgv1.MachineConfigPoolConditionType {
	var out []mcfgv1.MachineConfigPoolConditionType
	for _, c := range st.Conditions {
		out = append(out, c.Type)
	}
	return out
}

// TestStatusNoNodes: a pool that selects no node is Updated, as upstream,
// and says that it has no node rather than that all its nodes are updated
// (on a cluster whose nodes carry none of the labels the pool selects).
func TestStatusNoNodes(t *testing.T) {
	st := Status(Input{Pool: mkPool("infra", "node-role/infra"), Target: v1, Now: time.Unix(100, 0)}, nil)
	c := condOf(st, mcfgv1.MachineConfigPoolUpdated)
	if c.Status != corev1.ConditionTrue || c.Reason != "NoNodes" || !strings.Contains(c.Message, "No node is in this pool") {
		t.Errorf("Updated %+v, want True, NoNodes, saying no node is in the pool", c)
	}
	if st.Configuration.Name != v1 {
		t.Errorf("configuration %q, want %q", st.Configuration.Name, v1)
	}
}

// TestStatusNoMachineConfigs: a pool that never had a config and selects no
// MachineConfig (a kubeadm cluster's master pool before any master
// fragment) is not degraded and says why nothing rolls out; once it had a
// config, losing every fragment is a render failure as before.
func TestStatusNoMachineConfigs(t *testing.T) {
	nothing := fmt.Errorf("pool master: %w: the selector role=master", render.ErrNothingSelected)
	st := Status(Input{Pool: mkPool("master", "node-role/master"), Now: time.Unix(100, 0)}, nothing)
	for _, c := range []struct {
		t      mcfgv1.MachineConfigPoolConditionType
		status corev1.ConditionStatus
	}{{mcfgv1.MachineConfigPoolUpdated, corev1.ConditionFalse}, {mcfgv1.MachineConfigPoolUpdating, corev1.ConditionFalse},
		{mcfgv1.MachineConfigPoolRenderDegraded, corev1.ConditionFalse}, {mcfgv1.MachineConfigPoolDegraded, corev1.ConditionFalse}} {
		if got := condOf(st, c.t); got.Status != c.status {
			t.Errorf("%s %+v, want %s", c.t, got, c.status)
		}
	}
	if c := condOf(st, mcfgv1.MachineConfigPoolUpdated); c.Reason != "NoMachineConfigs" {
		t.Errorf("Updated %+v, want reason NoMachineConfigs", c)
	}
	st = Status(Input{Pool: mkPool("master", "node-role/master"), Target: v1, Now: time.Unix(100, 0)}, nothing)
	if c := condOf(st, mcfgv1.MachineConfigPoolRenderDegraded); c.Status != corev1.ConditionTrue {
		t.Errorf("a pool that had a config and lost its fragments: RenderDegraded %+v, want True", c)
	}
}

// What a node writes (its MachineConfigNode's NodeDegraded message, its
// reason annotation) reaches the pool's status cleaned and cut: no
// newline, escape sequence or bidirectional override, valid UTF-8, at
// most maxNodeText bytes of it, however long the node's text.
func TestNodeTextCleaned(t *testing.T) {
	hostile := "ok\n\x1b[2J\u202eevil\xff" + strings.Repeat("x", 1<<20)
	in := Input{Pool: mkPool("worker", ""), Target: v1, Now: time.Now(),
		Nodes: []*corev1.Node{mkNode("node-0", v1, v1, ready(corev1.ConditionTrue), state(names.StateDegraded),
			annot(names.Reason, hostile))},
		MCNs: map[string]*mcfgv1.MachineConfigNode{"node-0": mkMCN("node-0", v1, time.Time{}, hostile)}}
	msg := condOf(Status(in, nil), mcfgv1.MachineConfigPoolNodeDegraded).Message
	for _, bad := range []string{"\n", "\x1b", "\u202e", `\n`, `\x1b`, `\u202e`} {
		if strings.Contains(msg, bad) {
			t.Errorf("the pool's status quotes %q of the node's text: %.80q", bad, msg)
		}
	}
	if !utf8.ValidString(msg) || len(msg) > 2*(maxNodeText+64) {
		t.Errorf("the pool's status: %d bytes, valid UTF-8 %v", len(msg), utf8.ValidString(msg))
	}
	if !strings.Contains(msg, "ok  [2J evil ") {
		t.Errorf("the node's text is not quoted: %.120q", msg)
	}
}

// Clean keeps a text's printable part, whatever bytes it was given.
func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"disk full":            "disk full",
		"a\r\nb\tc":            "a  b c",
		"\u202eevil\u200f":     " evil ",
		"bad\xffbyte":          "bad byte",
		strings.Repeat("é", 9): strings.Repeat("é", 5) + "...",
	} {
		if got := Clean(in, 10); got != want {
			t.Errorf("Clean(%q, 10) = %q, want %q", in, got, want)
		}
	}
}
