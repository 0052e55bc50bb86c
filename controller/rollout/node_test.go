package rollout

import (
	"slices"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/names"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestNotReady ports upstream's TestIsNodeReady, and checks the reason.
func TestNotReady(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	tests := []struct {
		name string
		opts []opt
		want string
	}{
		{"node1 ready", []opt{ready(T)}, ""},
		{"node2 not ready", []opt{ready(F)}, "NotReady"},
		{"node3 disk pressure", []opt{cond(corev1.NodeDiskPressure, T)}, "DiskPressure"},
		{"node4 no disk pressure", []opt{cond(corev1.NodeDiskPressure, F)}, ""},
		{"node5 ready, disk pressure", []opt{ready(T), cond(corev1.NodeDiskPressure, T)}, "DiskPressure"},
		{"node6 ready, no disk pressure", []opt{ready(T), cond(corev1.NodeDiskPressure, F)}, ""},
		{"node7 not ready, disk pressure", []opt{ready(F), cond(corev1.NodeDiskPressure, T)}, "NotReady"},
		{"node8 not ready, no disk pressure", []opt{ready(F), cond(corev1.NodeDiskPressure, F)}, "NotReady"},
		{"node9 unschedulable", []opt{unschedulable}, "unschedulable"},
		{"node10 schedulable", nil, ""},
		{"node11 nothing reported", nil, ""},
		{"network unavailable unknown", []opt{ready(T), cond(corev1.NodeNetworkUnavailable, corev1.ConditionUnknown)}, "NetworkUnavailable"},
		{"ready unknown", []opt{ready(corev1.ConditionUnknown)}, "NotReady"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := notReady(mkNode("n", "", "", tt.opts...)); got != tt.want {
				t.Errorf("notReady %q, want %q", got, tt.want)
			}
		})
	}
}

// TestUnavailableNodes ports the non-layered cases of upstream's
// TestGetUnavailableMachines, and adds the failing daemon and nodeconfd's
// NodeDegraded.
func TestUnavailableNodes(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	tests := []struct {
		name  string
		nodes []*corev1.Node
		mcns  map[string]*mcfgv1.MachineConfigNode
		want  []NodeReason
	}{
		{"no nodes", nil, nil, nil},
		{"1 in progress", []*corev1.Node{
			mkNode("node-0", v0, v0, ready(T)), mkNode("node-1", v1, v1, ready(T)), mkNode("node-2", v0, v1, ready(T)),
		}, nil, []NodeReason{{"node-2", "updating"}}},
		{"1 unavail, 1 in progress", []*corev1.Node{
			mkNode("node-0", v0, v0, ready(T)), mkNode("node-1", v1, v1, ready(F)), mkNode("node-2", v0, v1, ready(T)),
		}, nil, []NodeReason{{"node-1", "NotReady"}, {"node-2", "updating"}}},
		{"1 updated, 2 updating, one ready", []*corev1.Node{
			mkNode("node-0", v0, v1, ready(T)), mkNode("node-1", v2, v2, ready(T)), mkNode("node-2", v0, v2, ready(T)),
		}, nil, []NodeReason{{"node-0", "updating"}, {"node-2", "updating"}}},
		{"1 updated, 2 updating, one not ready", []*corev1.Node{
			mkNode("node-0", v0, v1, ready(F)), mkNode("node-1", v2, v2, ready(T)), mkNode("node-2", v0, v2, ready(T)),
		}, nil, []NodeReason{{"node-0", "NotReady"}, {"node-2", "updating"}}},
		{"2 updated, 1 updating", []*corev1.Node{
			mkNode("node-0", v0, v1, ready(T)), mkNode("node-1", v1, v1, ready(T)), mkNode("node-2", v1, v1, ready(F)),
		}, nil, []NodeReason{{"node-0", "updating"}, {"node-2", "NotReady"}}},
		{"2 updated, 1 updating, no conditions reported", []*corev1.Node{
			mkNode("node-0", v0, v1), mkNode("node-1", v1, v1), mkNode("node-2", v1, v1, ready(F)),
		}, nil, []NodeReason{{"node-0", "updating"}, {"node-2", "NotReady"}}},
		{"daemon failed: available to retarget", []*corev1.Node{
			mkNode("node-0", v0, v1, ready(T), state(names.StateDegraded)), mkNode("node-1", v0, v1, ready(T), state(names.StateUnreconcilable)),
		}, nil, nil},
		{"degraded at its config: unavailable", []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T), state(names.StateDegraded)),
		}, nil, []NodeReason{{"node-0", "state Degraded"}}},
		{"no state yet", []*corev1.Node{mkNode("node-0", v1, v1, ready(T), state(""))}, nil, []NodeReason{{"node-0", "no state yet"}}},
		{"NodeDegraded on a done node (nodeconfd)", []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)), mkNode("node-1", v1, v1, ready(T)),
		}, map[string]*mcfgv1.MachineConfigNode{
			"node-0": mkMCN("node-0", v1, time.Unix(1, 0), "config drift"), "node-1": mkMCN("node-1", v1, time.Unix(1, 0), ""),
		}, []NodeReason{{"node-0", "NodeDegraded"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unavailableNodes(tt.nodes, tt.mcns)
			if !slices.Equal(got, tt.want) {
				t.Errorf("unavailable %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSortNodes ports upstream's TestSortNodeList and adds the name as
// the tie-breaker.
func TestSortNodes(t *testing.T) {
	at := func(sec, nsec int64) opt { return created(time.Unix(sec, nsec)) }
	zone := func(z string) opt { return label(ZoneLabel, z) }
	nodes := []*corev1.Node{
		mkNode("node-5", v1, v1, zone("ZZZ"), at(100, 30)),
		mkNode("node-6", v1, v1, zone("ZZZ"), at(1500, 30)),
		mkNode("node-4", v1, v1, zone("ZZZ"), at(0, 42)),
		mkNode("node-3", v1, v1, zone("RRR"), at(100, 30)),
		mkNode("node-8", v1, v1, at(200, 30)),
		mkNode("node-2", v1, v1, zone("RRR"), at(0, 42)),
		mkNode("node-9", v1, v1, at(900, 30)),
		mkNode("node-7", v1, v1, at(0, 42)),
		mkNode("node-1", v1, v1, zone("QQQ"), at(0, 42)),
	}
	sortNodes(nodes)
	want := []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6", "node-7", "node-8", "node-9"}
	if got := nodeNames(nodes); !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}

	ties := []*corev1.Node{mkNode("b", "", "", zone("A")), mkNode("c", "", ""), mkNode("a", "", "", zone("A")), mkNode("0", "", "")}
	sortNodes(ties)
	if got, want := nodeNames(ties), []string{"a", "b", "0", "c"}; !slices.Equal(got, want) {
		t.Errorf("ties %v, want %v", got, want)
	}
}
