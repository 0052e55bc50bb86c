package controller

import (
	"context"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgfake "github.com/openshift/client-go/machineconfiguration/clientset/versioned/fake"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
)

// A rendered config's name made by someone else before the controller
// (anyone who may create MachineConfigs can) is never taken for the
// pool's render: other contents, another owner (or the pool before it was
// made again), labels or finalizers each stop the pool, naming the field;
// only the controller's own config, or none, goes on. Whether the cache
// has it or the create finds it, the answer is the same.
func TestRenderedNameTakenByAnother(t *testing.T) {
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", UID: "pool-uid"}}
	want := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-" + strings.Repeat("a", 32)}}
	want.Spec.OSImageURL = "example.com/os@sha256:1"
	mine := func() *mcfgv1.MachineConfig {
		mc := want.DeepCopy()
		mc.OwnerReferences = renderedOwner(pool)
		return mc
	}
	for _, c := range []struct {
		name     string
		existing func() *mcfgv1.MachineConfig // nil: none
		refused  string                       // "": goes on
	}{
		{"None", nil, ""},
		{"TheControllers", mine, ""},
		{"OtherContents", func() *mcfgv1.MachineConfig {
			mc := mine()
			mc.Spec.OSImageURL = "evil.example.com/os"
			return mc
		}, "spec: exists with other contents"},
		{"Unowned", func() *mcfgv1.MachineConfig {
			mc := mine()
			mc.OwnerReferences = nil
			return mc
		}, "metadata.ownerReferences"},
		{"OwnedByThePoolBeforeIt", func() *mcfgv1.MachineConfig {
			mc := mine()
			mc.OwnerReferences[0].UID = "old-pool-uid"
			return mc
		}, "metadata.ownerReferences"},
		{"OwnedByAnotherPool", func() *mcfgv1.MachineConfig {
			mc := mine()
			mc.OwnerReferences[0].Name = "infra"
			return mc
		}, "metadata.ownerReferences"},
		{"Labelled", func() *mcfgv1.MachineConfig {
			mc := mine()
			mc.Labels = map[string]string{"machineconfiguration.openshift.io/role": "worker"}
			return mc
		}, "metadata.labels"},
		{"Finalizer", func() *mcfgv1.MachineConfig {
			mc := mine()
			mc.Finalizers = []string{"example.com/keep"}
			return mc
		}, "metadata.finalizers"},
	} {
		for _, cached := range []bool{true, false} {
			name := c.name + map[bool]string{true: "/Cached", false: "/FoundByCreate"}[cached]
			t.Run(name, func(t *testing.T) {
				mcfg := mcfgfake.NewClientset()
				c2 := &Controller{API: kubetest.API(k8sfake.NewClientset(), mcfg), configs: bare(&mcfgv1.MachineConfig{})}
				if c.existing != nil {
					ex := c.existing()
					if _, err := mcfg.MachineconfigurationV1().MachineConfigs().Create(context.Background(), ex,
						metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					if cached {
						add(t, c2.configs, ex)
					}
				}
				refused, err := c2.ensureRendered(context.Background(), pool, want, zap.NewNop())
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case c.refused == "" && refused != nil:
					t.Errorf("refused: %v", refused)
				case c.refused != "" && (refused == nil || !strings.Contains(refused.Error(), c.refused)):
					t.Errorf("refused %v, want a refusal naming %q", refused, c.refused)
				}
			})
		}
	}
}
