package rollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/window"
)

// TestNextCandidates ports the non-layered cases of upstream's
// TestGetCandidateMachines: progress is maxUnavailable, target v1; want
// are the nodes handed, others the candidates left for later, room the
// capacity upstream returns.
func TestNextCandidates(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	tests := []struct {
		name     string
		progress int32
		nodes    []*corev1.Node
		want     []string
		others   []string
		room     int
	}{
		{"no progress - capacity 1", 1, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v1, v1, ready(T)), mkNode("node-2", v1, v1, ready(T)),
		}, nil, nil, 1},
		{"no progress - capacity 0", 1, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v1, v1, ready(T)), mkNode("node-2", v1, v1, ready(F)),
		}, nil, nil, 0},
		{"no progress because we have an unavailable node", 1, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v1, v1, ready(F)), mkNode("node-2", v0, v1, ready(T)),
		}, nil, nil, 0},
		{"node-0 is unavailable and should be skipped over", 2, []*corev1.Node{
			mkNode("node-0", v0, v0, ready(F)), mkNode("node-1", v0, v0, ready(T)), mkNode("node-2", v0, v0, ready(T)),
		}, []string{"node-1"}, []string{"node-2"}, 1},
		{"node-2 is going to change config, so we can only progress one more", 3, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v1, v1, ready(F)), mkNode("node-2", v0, v1, ready(T)),
			mkNode("node-3", v0, v0, ready(T)), mkNode("node-4", v0, v0, ready(T)),
		}, []string{"node-3"}, []string{"node-4"}, 1},
		{"We have a node working, don't start anything else", 1, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v1, v1, ready(T)), mkNode("node-2", v0, v1, ready(T)),
			mkNode("node-3", v0, v0, ready(T)), mkNode("node-4", v0, v0, ready(T)),
		}, nil, nil, 0},
		{"progress on old stuck node", 1, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", "v0.1", "v0.2", ready(T), state(names.StateDegraded)),
			mkNode("node-2", v0, v0, ready(T)),
		}, []string{"node-1"}, []string{"node-2"}, 1},
		{"Don't change a degraded node to same config, but also don't start another", 1, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v1, v1, ready(T), state(names.StateDegraded)),
			mkNode("node-2", v0, v0, ready(T)),
		}, nil, nil, 0},
		{"Must be able to roll back", 1, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v1, v1, ready(T)),
			mkNode("node-2", v1, v2, ready(T), state(names.StateDegraded)), mkNode("node-3", v1, v1, ready(T)),
		}, []string{"node-2"}, nil, 1},
		{"Validate we also don't affect nodes which haven't started work", 1, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-2", v1, v2, ready(T), state(names.StateDone)), mkNode("node-3", v1, v1, ready(T)),
		}, nil, nil, 0},
		{"More nodes in mixed order", 4, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v1, v1, ready(F)), mkNode("node-2", v0, v1, ready(T)),
			mkNode("node-3", v0, v0, ready(T)), mkNode("node-4", v0, v0, ready(T)), mkNode("node-5", v0, v0, ready(T)),
			mkNode("node-6", v0, v0, ready(T)), mkNode("node-7", v1, v1, ready(T)), mkNode("node-8", v1, v1, ready(T)),
		}, []string{"node-3", "node-4"}, []string{"node-5", "node-6"}, 2},
		{"failing this config takes room", 2, []*corev1.Node{
			mkNode("node-0", v0, v1, ready(T), state(names.StateDegraded)), mkNode("node-1", v0, v0, ready(T)), mkNode("node-2", v0, v0, ready(T)),
		}, []string{"node-1"}, []string{"node-2"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Pool: withMax(mkPool("worker", ""), intstr.FromInt32(tt.progress)), Target: v1, Nodes: tt.nodes}
			room, _ := capacity(in, int(tt.progress))
			if room != tt.room {
				t.Errorf("capacity %d, want %d", room, tt.room)
			}
			var needing []*corev1.Node
			for _, n := range tt.nodes {
				if n.Annotations[names.DesiredConfig] != v1 {
					needing = append(needing, n)
				}
			}
			cands, _ := candidates(needing, nil, "")
			if room > 0 {
				if got := nodeNames(cands[min(room, len(cands)):]); !slices.Equal(got, tt.others) {
					t.Errorf("others %v, want %v", got, tt.others)
				}
			}
			d := Next(in)
			if !slices.Equal(d.Hand, tt.want) {
				t.Errorf("hand %v, want %v (decision %+v)", d.Hand, tt.want, d)
			}
		})
	}
}

// nextCase is one Next decision and what it must be.
type nextCase struct {
	name    string
	in      Input
	hand    []string
	waiting string // a part of Waiting ("" for none)
	requeue time.Duration
	skipped []string
}

// TestNext checks what nodeconfd adds to upstream's choice, and upstream's
// TestPaused, TestShouldDoNothing and TestEmptyCurrentMachineConfig.
func TestNext(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	three := threeNodes
	d1 := mkNode("worker-1", v1, v1, ready(T))
	pool := mkPool("worker", "")
	paused := mkPool("worker", "")
	paused.Spec.Paused = true
	bad := withMax(mkPool("worker", ""), intstr.FromString("lots"))
	two := withMax(mkPool("worker", ""), intstr.FromInt32(2))
	runNext(t, []nextCase{
		{"do nothing: all told", Input{Pool: pool, Target: v1, Nodes: []*corev1.Node{d1, mkNode("worker-2", v0, v1, ready(T))}}, nil, "", 0, nil},
		{"empty target", Input{Pool: pool, Target: "", Nodes: three()}, nil, "pool has no rendered config yet", 0, nil},
		{"paused pool", Input{Pool: paused, Target: v1, Nodes: three()}, nil, "pool is paused", 0, nil},
		{"first node", Input{Pool: pool, Target: v1, Nodes: three()}, []string{"worker-1"}, "", 0, nil},
		{"paused node passed over", Input{Pool: pool, Target: v1, Nodes: three(annot(names.PauseAnnotation, "alice: db migration"))},
			[]string{"worker-2"}, "", 0, []string{`worker-1 paused by annotation nodeconfd.io/pause="alice: db migration"`}},
		{"every candidate paused", Input{Pool: pool, Target: v1, Nodes: []*corev1.Node{mkNode("worker-1", v0, v0, ready(T), annot(names.PauseAnnotation, ""))}},
			nil, "no node that needs " + v1 + " can take it now: worker-1 paused", 0, []string{`worker-1 paused by annotation nodeconfd.io/pause=""`}},
		{"fewer than room: why", Input{Pool: two, Target: v1, Nodes: []*corev1.Node{d1, mkNode("worker-2", v0, v0, ready(T)), mkNode("worker-3", v0, v0, annot(names.PauseAnnotation, "bob"))}},
			[]string{"worker-2"}, `1 more nodes could update but were passed over: worker-3 paused by annotation nodeconfd.io/pause="bob"`, 0,
			[]string{`worker-3 paused by annotation nodeconfd.io/pause="bob"`}},
		{"a not ready node takes room", Input{Pool: two, Target: v1, Nodes: []*corev1.Node{d1, mkNode("worker-2", v0, v0, ready(T)), mkNode("worker-3", v0, v0, ready(F))}},
			[]string{"worker-2"}, "", 0, []string{"worker-3 NotReady"}},
		{"health gate", Input{Pool: pool, Target: v1, Nodes: three(annot(names.FailedConfig, v1), annot(names.DesiredConfig, v1))},
			nil, v1 + " failed the health gate on worker-1 (annotation machineconfiguration.openshift.io/failedConfig); the rollout stops", 0, nil},
		{"a report of a node moved on does not stop", Input{Pool: pool, Target: v1, Nodes: three(annot(names.FailedConfig, v1))},
			[]string{"worker-1"}, "", 0, nil},
		{"failedConfig of another config does not stop", Input{Pool: pool, Target: v2, Nodes: three(annot(names.FailedConfig, v1))},
			[]string{"worker-1"}, "", 0, nil},
		{"no room", Input{Pool: two, Target: v1, Nodes: []*corev1.Node{
			mkNode("worker-1", v0, v0, ready(F)), mkNode("worker-2", v0, v1, ready(T)), mkNode("worker-3", v0, v0, ready(T)),
		}}, nil, "2 of 3 nodes unavailable (maxUnavailable 2): worker-1 NotReady, worker-2 updating", 0, []string{"worker-1 NotReady"}},
		{"malformed maxUnavailable", Input{Pool: bad, Target: v1, Nodes: three()}, nil, "MachineConfigPool worker: spec.maxUnavailable", 0, nil},
		{"controller's node last", Input{Pool: pool, Target: v1, Nodes: three(), DeferNode: "worker-1"},
			[]string{"worker-2"}, "", 0, []string{"worker-1 runs the controller and updates last"}},
		{"controller's node when it is the last", Input{Pool: pool, Target: v1, Nodes: []*corev1.Node{d1, mkNode("worker-3", v0, v0, ready(T))}, DeferNode: "worker-3"},
			[]string{"worker-3"}, "", 0, nil},
		// A fresh install: no node has a config yet (issue 40's deadlock: each "no state yet",
		// unavailable, so none was handed one and none ever got a state).
		{"fresh install: first node", Input{Pool: pool, Target: v1, Nodes: fresh(), MCNs: registered("fr-a", "fr-b")},
			[]string{"fr-a"}, "", 0, nil},
		{"fresh install: room for two", Input{Pool: two, Target: v1, Nodes: fresh(), MCNs: registered("fr-a", "fr-b")},
			[]string{"fr-a", "fr-b"}, "", 0, nil},
		{"fresh install: one at a time", Input{Pool: pool, Target: v1, MCNs: registered("fr-a", "fr-b"), Nodes: []*corev1.Node{
			mkNode("fr-a", "", v1, ready(T)), mkNode("fr-b", "", "", ready(T))}},
			nil, "1 of 2 nodes unavailable (maxUnavailable 1): fr-a updating", 0, nil},
		{"fresh install: the next after the first adopted", Input{Pool: pool, Target: v1, MCNs: registered("fr-a", "fr-b"), Nodes: []*corev1.Node{
			mkNode("fr-a", v1, v1, ready(T)), mkNode("fr-b", "", "", ready(T))}},
			[]string{"fr-b"}, "", 0, nil},
		{"fresh node without its daemon passed over, not counted", Input{Pool: pool, Target: v1, Nodes: fresh(), MCNs: registered("fr-b")},
			[]string{"fr-b"}, "", 0, []string{"fr-a no MachineConfigNode yet (its daemon has not registered)"}},
		{"no daemon registered yet", Input{Pool: pool, Target: v1, Nodes: fresh()},
			nil, "no node that needs " + v1 + " can take it now: fr-a no MachineConfigNode yet", 0, []string{
				"fr-a no MachineConfigNode yet (its daemon has not registered)", "fr-b no MachineConfigNode yet (its daemon has not registered)"}},
		{"zone order", Input{Pool: two, Target: v1, Nodes: []*corev1.Node{
			mkNode("a", v0, v0, label(ZoneLabel, "z2")), mkNode("b", v0, v0), mkNode("c", v0, v0, label(ZoneLabel, "z1")),
		}}, []string{"c", "a"}, "", 0, nil},
	})
}

// fresh are two nodes no config was handed to yet.
func fresh() []*corev1.Node {
	T := corev1.ConditionTrue
	return []*corev1.Node{mkNode("fr-a", "", "", ready(T)), mkNode("fr-b", "", "", ready(T))}
}

// registered are the MachineConfigNodes of nodes whose daemons registered.
func registered(nodes ...string) map[string]*mcfgv1.MachineConfigNode {
	out := map[string]*mcfgv1.MachineConfigNode{}
	for _, n := range nodes {
		out[n] = mkMCN(n, "", time.Time{}, "")
	}
	return out
}

// TestNextTime checks the maintenance windows and the soak.
func TestNextTime(t *testing.T) {
	T := corev1.ConditionTrue
	now := time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC) // a Tuesday
	berlin, open, never := mustWindows(t, "Tue 22:00-23:00 Europe/Berlin"), mustWindows(t, "Tue 11:00-13:00 UTC"), mustWindows(t, "Tue 12:00-13:00 UTC")
	never[0].Days = [7]bool{}
	three := threeNodes
	done := func(name string, at time.Time) (*corev1.Node, *mcfgv1.MachineConfigNode) {
		return mkNode(name, v1, v1, ready(T)), mkMCN(name, v1, at, "")
	}
	d1, m1 := done("worker-1", now.Add(-6*time.Minute))
	d2, m2 := done("worker-2", now.Add(-1*time.Minute))
	dFuture, mFuture := done("worker-4", now.AddDate(10, 0, 0))
	dSkew, mSkew := done("worker-5", now.Add(30*time.Second))
	pool := mkPool("worker", "")
	runNext(t, []nextCase{
		{"window closed", Input{Pool: pool, Target: v1, Nodes: three(), Now: now, Windows: berlin},
			nil, "maintenance window opens Tue 22:00 Europe/Berlin", 9 * time.Hour, nil},
		{"window open", Input{Pool: pool, Target: v1, Nodes: three(), Now: now, Windows: open}, []string{"worker-1"}, "", 0, nil},
		{"window never opens", Input{Pool: pool, Target: v1, Nodes: three(), Now: now, Windows: never}, nil, "no maintenance window ever opens", 0, nil},
		{"soak running", Input{Pool: pool, Target: v1, Now: now, Soak: 5 * time.Minute,
			Nodes: []*corev1.Node{d1, d2, mkNode("worker-3", v0, v0, ready(T))},
			MCNs:  map[string]*mcfgv1.MachineConfigNode{"worker-1": m1, "worker-2": m2}},
			nil, "next node at 2026-03-03T12:04:00Z: soak of worker-2 (5m0s)", 4 * time.Minute, nil},
		{"soak over", Input{Pool: pool, Target: v1, Now: now, Soak: 5 * time.Minute,
			Nodes: []*corev1.Node{d1, mkNode("worker-3", v0, v0, ready(T))},
			MCNs:  map[string]*mcfgv1.MachineConfigNode{"worker-1": m1}},
			[]string{"worker-3"}, "", 0, nil},
		{"soak unknown: MachineConfigNode missing", Input{Pool: pool, Target: v1, Now: now, Soak: 5 * time.Minute,
			Nodes: []*corev1.Node{d1, mkNode("worker-3", v0, v0, ready(T))}},
			nil, "soak of worker-1: waiting for its MachineConfigNode", 0, nil},
		{"soak unknown: MachineConfigNode still on the old config", Input{Pool: pool, Target: v1, Now: now, Soak: 5 * time.Minute,
			Nodes: []*corev1.Node{d1, mkNode("worker-3", v0, v0, ready(T))},
			MCNs:  map[string]*mcfgv1.MachineConfigNode{"worker-1": mkMCN("worker-1", v0, now.Add(-time.Hour), "")}},
			nil, "soak of worker-1: waiting", 0, nil},
		// A node's finish time years ahead (its own word) would hold the whole pool that long;
		// it is not believed. One within the clock skew allowed is.
		{"soak of a time years ahead: not believed", Input{Pool: pool, Target: v1, Now: now, Soak: 5 * time.Minute,
			Nodes: []*corev1.Node{d1, dFuture, mkNode("worker-3", v0, v0, ready(T))},
			MCNs:  map[string]*mcfgv1.MachineConfigNode{"worker-1": m1, "worker-4": mFuture}},
			[]string{"worker-3"}, "", 0, nil},
		{"soak of a time within the clock skew", Input{Pool: pool, Target: v1, Now: now, Soak: 5 * time.Minute,
			Nodes: []*corev1.Node{dSkew, mkNode("worker-3", v0, v0, ready(T))},
			MCNs:  map[string]*mcfgv1.MachineConfigNode{"worker-5": mSkew}},
			nil, "next node at 2026-03-03T12:05:30Z: soak of worker-5 (5m0s)", 5*time.Minute + 30*time.Second, nil},
		{"no soak", Input{Pool: pool, Target: v1, Now: now, Nodes: []*corev1.Node{d2, mkNode("worker-3", v0, v0, ready(T))}},
			[]string{"worker-3"}, "", 0, nil},
	})
}

// threeNodes are three ready nodes on v0, the first with opts.
func threeNodes(opts ...opt) []*corev1.Node {
	return []*corev1.Node{
		mkNode("worker-1", v0, v0, append([]opt{ready(corev1.ConditionTrue)}, opts...)...),
		mkNode("worker-2", v0, v0, ready(corev1.ConditionTrue)), mkNode("worker-3", v0, v0, ready(corev1.ConditionTrue)),
	}
}

func mustWindows(t *testing.T, s string) window.Windows {
	t.Helper()
	ws, err := window.ParseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func runNext(t *testing.T, tests []nextCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Next(tt.in)
			if !slices.Equal(d.Hand, tt.hand) {
				t.Errorf("hand %v, want %v", d.Hand, tt.hand)
			}
			if (tt.waiting == "") != (d.Waiting == "") || !strings.Contains(d.Waiting, tt.waiting) {
				t.Errorf("waiting %q, want it to contain %q", d.Waiting, tt.waiting)
			}
			if d.RequeueAfter != tt.requeue {
				t.Errorf("requeue after %v, want %v", d.RequeueAfter, tt.requeue)
			}
			var skipped []string
			for _, s := range d.Skipped {
				skipped = append(skipped, s.String())
			}
			if !slices.Equal(skipped, tt.skipped) {
				t.Errorf("skipped %q, want %q", skipped, tt.skipped)
			}
		})
	}
}

// The texts a pool condition quotes are capped: at most 10 nodes, then a
// count; each text cut without splitting a character.
func TestJoinCapped(t *testing.T) {
	var items []string
	for i := range 12 {
		items = append(items, fmt.Sprintf("worker-%d NotReady", i))
	}
	got := joinCapped(items)
	if !strings.HasSuffix(got, "worker-9 NotReady, and 2 more") || strings.Contains(got, "worker-10") {
		t.Errorf("joinCapped of 12 = %q", got)
	}
	long := strings.Repeat("é", 200) // 400 bytes
	if c := cut(long, maxNodeText); len(c) > maxNodeText+3 || !utf8.ValidString(c) || !strings.HasSuffix(c, "...") {
		t.Errorf("cut = %d bytes, valid %v", len(c), utf8.ValidString(c))
	}
	if c := cut("short", maxNodeText); c != "short" {
		t.Errorf("cut(short) = %q", c)
	}
}

// A node whose drain could not finish (a budget at zero) is handed the config after the nodes
// whose drains could: the rollout moves on, and hands it last.
func TestNextDrainableFirst(t *testing.T) {
	blocked := func(name string) string {
		if name == "a" {
			return "The drain could not finish now: pod shop/db-0: PodDisruptionBudget db allows 0 disruptions"
		}
		return ""
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var nodes []*corev1.Node
	for i, name := range []string{"a", "b", "c"} {
		nodes = append(nodes, mkNode(name, v0, v0, ready(corev1.ConditionTrue), created(t0.Add(time.Duration(i)*time.Hour))))
	}
	in := Input{Pool: withMax(mkPool("worker", ""), intstr.FromInt32(1)), Target: v1, Nodes: nodes, Now: t0,
		DrainBlocked: blocked}
	d := Next(in)
	if len(d.Hand) != 1 || d.Hand[0] != "b" {
		t.Fatalf("handed %v, want b (a's drain could not finish)", d.Hand)
	}
	if len(d.Skipped) != 1 || d.Skipped[0].Node != "a" || !strings.Contains(d.Skipped[0].Reason, "handed later: The drain could not finish now") {
		t.Errorf("skipped %v, want a, handed later", d.Skipped)
	}
	// Only a left: it is handed (it waits uncordoned on its node).
	for _, n := range nodes[1:] {
		n.Annotations[names.DesiredConfig], n.Annotations[names.CurrentConfig] = v1, v1
	}
	if d := Next(in); len(d.Hand) != 1 || d.Hand[0] != "a" {
		t.Errorf("with a left, handed %v, want a", d.Hand)
	}
	// Without forecasts, the usual order: oldest first.
	in.DrainBlocked = nil
	for _, n := range nodes[1:] {
		n.Annotations[names.DesiredConfig], n.Annotations[names.CurrentConfig] = v0, v0
	}
	if d := Next(in); len(d.Hand) != 1 || d.Hand[0] != "a" {
		t.Errorf("without forecasts, handed %v, want a (oldest first)", d.Hand)
	}
}
