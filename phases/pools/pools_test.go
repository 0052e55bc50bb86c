package pools

import (
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPoolForNode ports upstream's TestGetPrimaryPoolForNode, with the
// selector cases of upstream's ListPools.
func TestPoolForNode(t *testing.T) {
	master, worker, infra := mkPool("master", "node-role/master"), mkPool("worker", "node-role/worker"), mkPool("infra", "node-role/infra")
	std := []*mcfgv1.MachineConfigPool{master, worker}
	withInfra := []*mcfgv1.MachineConfigPool{master, worker, infra}
	empty := mkPool("everything", "")
	empty.Spec.NodeSelector = &metav1.LabelSelector{}
	bad := mkPool("bad", "")
	bad.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Sideways"}}}
	tests := []struct {
		name    string
		pools   []*mcfgv1.MachineConfigPool
		labels  map[string]string
		want    string
		wantErr []string
	}{
		{"no role label", std, map[string]string{"node-role": ""}, "", nil},
		{"master", std, map[string]string{"node-role/master": ""}, "master", nil},
		{"master and worker: master", std, map[string]string{"node-role/master": "", "node-role/worker": ""}, "master", nil},
		{"worker and custom: custom", withInfra, map[string]string{"node-role/worker": "", "node-role/infra": ""}, "infra", nil},
		{"master and custom: master (OCPBUGS-2177)", withInfra, map[string]string{"node-role/master": "", "node-role/infra": ""}, "master", nil},
		{"two custom pools", append(withInfra, mkPool("infra2", "node-role/infra2")),
			map[string]string{"node-role/infra": "", "node-role/infra2": ""}, "", []string{"node-0", "infra, infra2"}},
		{"two custom pools with one selector", []*mcfgv1.MachineConfigPool{mkPool("test-cluster-pool-1", "node-role/master"), mkPool("test-cluster-pool-2", "node-role/master")},
			map[string]string{"node-role/master": ""}, "", []string{"node-0", "test-cluster-pool-1, test-cluster-pool-2"}},
		{"windows node: no pool", []*mcfgv1.MachineConfigPool{worker},
			map[string]string{"node-role/master": "", "node-role/worker": "", "kubernetes.io/os": "windows"}, "", nil},
		{"worker only", std, map[string]string{"node-role/worker": ""}, "worker", nil},
		{"empty selector selects nothing", []*mcfgv1.MachineConfigPool{empty, worker}, map[string]string{"node-role/worker": ""}, "worker", nil},
		{"nil selector selects nothing", []*mcfgv1.MachineConfigPool{mkPool("nil", "")}, map[string]string{"a": "b"}, "", nil},
		{"invalid selector", []*mcfgv1.MachineConfigPool{bad}, nil, "", []string{"MachineConfigPool bad: spec.nodeSelector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := mkNode("node-0", tt.labels)
			got, err := NewMembership(tt.pools).For(n)
			if tt.wantErr != nil {
				if err == nil || got != nil {
					t.Fatalf("got %v, %v; want an error", got, err)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not name %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Errorf("pool %q, want %q", name, tt.want)
			}
		})
	}
}

// TestNodesForPool ports upstream's TestGetNodesForPool: a pool's nodes
// are the nodes whose PoolFor is that pool.
func TestNodesForPool(t *testing.T) {
	set := func(n int, prefix string, labels map[string]string) []*corev1.Node {
		var out []*corev1.Node
		for i := range n {
			node := mkNode(prefix+string(rune('a'+i)), labels)
			out = append(out, node)
		}
		return out
	}
	mixed := func(n int, a, b map[string]string) []*corev1.Node {
		return append(set(n, "a-", a), set(n, "b-", b)...)
	}
	windows := set(1, "win-", map[string]string{"kubernetes.io/os": "windows"})
	tests := []struct {
		name  string
		pool  *mcfgv1.MachineConfigPool
		nodes []*corev1.Node
		want  int
	}{
		{"no masters", mkPool("master", "node-role/master"), mixed(3, map[string]string{"node-role": ""}, map[string]string{"node-role/worker": ""}), 0},
		{"two masters", mkPool("master", "node-role/master"), mixed(2, map[string]string{"node-role/master": ""}, map[string]string{"node-role/worker": ""}), 2},
		{"infra alone", mkPool("infra", "node-role/infra"), mixed(3, map[string]string{"node-role/master": ""}, map[string]string{"node-role/worker": "", "node-role/infra": ""}), 3},
		{"windows workers left out", mkPool("worker", "node-role/worker"),
			append(mixed(3, map[string]string{"node-role/master": ""}, map[string]string{"node-role/worker": "", "node-role/infra": ""}), windows...), 3},
		{"windows only", mkPool("worker", "node-role/worker"), windows, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := 0
			for _, n := range tt.nodes {
				p, err := NewMembership([]*mcfgv1.MachineConfigPool{tt.pool}).For(n)
				if err != nil {
					t.Fatal(err)
				}
				if p != nil && p.Name == tt.pool.Name {
					got++
				}
			}
			if got != tt.want {
				t.Errorf("%d nodes, want %d", got, tt.want)
			}
		})
	}
}

func mkNode(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// mkPool is a pool selecting nodes with the label key (any value), none
// when key is empty.
func mkPool(name, key string) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if key != "" {
		p.Spec.NodeSelector = metav1.AddLabelToSelector(&metav1.LabelSelector{}, key, "")
	}
	return p
}
