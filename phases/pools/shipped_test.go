package pools

import (
	"bytes"
	"os"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// shippedPools reads the pools of manifests/06-pools.yaml.
func shippedPools(t *testing.T) []*mcfgv1.MachineConfigPool {
	t.Helper()
	data, err := os.ReadFile("../../manifests/06-pools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []*mcfgv1.MachineConfigPool
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		p := &mcfgv1.MachineConfigPool{}
		if err := yaml.UnmarshalStrict(doc, p); err != nil {
			t.Fatalf("manifests/06-pools.yaml: %v", err)
		}
		out = append(out, p)
	}
	return out
}

// infraPool is a custom pool as the OpenShift documentation makes one: its
// nodes carry node-role.kubernetes.io/infra (beside worker), and it takes
// the worker MachineConfigs and its own.
func infraPool(name string) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.MachineConfigPoolSpec{
		MachineConfigSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "machineconfiguration.openshift.io/role", Operator: metav1.LabelSelectorOpIn, Values: []string{"worker", name}}}},
		NodeSelector: metav1.AddLabelToSelector(&metav1.LabelSelector{}, "node-role.kubernetes.io/"+name, ""),
	}}
}

// TestShippedPools puts the nodes of a kubeadm-style and an OpenShift-style
// cluster in the shipped pools (and a custom one), with the labels each
// registers its nodes with: the pool an administrator expects, or an error
// that says why none.
func TestShippedPools(t *testing.T) {
	shipped := shippedPools(t)
	if len(shipped) != 2 || shipped[0].Name != Worker || shipped[1].Name != Master {
		t.Fatalf("manifests/06-pools.yaml: want the worker and master pools")
	}
	withInfra := append(append([]*mcfgv1.MachineConfigPool{}, shipped...), infraPool("infra"))
	twoCustom := append(append([]*mcfgv1.MachineConfigPool{}, withInfra...), infraPool("gpu"))
	const (
		cp     = "node-role.kubernetes.io/control-plane"
		master = "node-role.kubernetes.io/master"
		worker = "node-role.kubernetes.io/worker"
		infra  = "node-role.kubernetes.io/infra"
		os     = "kubernetes.io/os"
	)
	tests := []struct {
		name    string
		pools   []*mcfgv1.MachineConfigPool
		labels  []string
		want    string
		wantErr string
	}{
		{"kubeadm worker (no role label)", shipped, []string{os + "=linux"}, Worker, ""},
		{"kubeadm control plane", shipped, []string{os + "=linux", cp}, Master, ""},
		{"kind control plane", shipped, []string{cp, "node.kubernetes.io/exclude-from-external-load-balancers"}, Master, ""},
		{"OpenShift worker", shipped, []string{worker}, Worker, ""},
		{"OpenShift master", shipped, []string{master, cp}, Master, ""},
		{"compact node (master + worker)", shipped, []string{master, cp, worker}, Master, ""},
		{"kubeadm control plane that runs workloads", shipped, []string{cp, worker}, Master, ""},
		{"old master label alone", shipped, []string{master}, "", "in no MachineConfigPool"},
		{"infra node as OpenShift documents it", withInfra, []string{worker, infra}, "infra", ""},
		{"infra label on a plain node", withInfra, []string{infra}, "infra", ""},
		{"worker beside an infra pool", withInfra, []string{worker}, Worker, ""},
		{"infra master stays master", withInfra, []string{master, cp, infra}, Master, ""},
		{"two custom pools", twoCustom, []string{worker, infra, "node-role.kubernetes.io/gpu"}, "", "2 custom MachineConfigPools (gpu, infra)"},
		{"Windows node", shipped, []string{os + "=windows", worker}, "", "Windows node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			labels := map[string]string{}
			for _, l := range tt.labels {
				k, v, _ := strings.Cut(l, "=")
				labels[k] = v
			}
			got, err := NameFor(tt.pools, mkNode("node-0", labels))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "node-0") {
					t.Fatalf("got %q, %v; want an error naming node-0 and %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
