package bench

import (
	"context"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/phases/render"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// createPool creates a MachineConfigPool that selects its role's
// MachineConfigs, as the shipped pools do (no node selector: its node is
// in it by --pool).
func createPool(ctx context.Context, b *testing.B, name string) {
	b.Helper()
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: render.PoolSelector(name)}}
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}

// createFragment creates an administrator's MachineConfig of pool's role
// with one file.
func createFragment(ctx context.Context, b *testing.B, name, pool, path, content string) {
	b.Helper()
	mc := testbed.MachineConfig(name, ignition(map[string]string{path: content}))
	mc.Labels = map[string]string{render.RoleLabel: pool}
	if err := bed.CreateConfig(ctx, mc); err != nil {
		b.Fatal(err)
	}
}

// updateFragment gives the fragment name one file, renders the pool as the
// controller does, creates the rendered config and returns its name.
func updateFragment(ctx context.Context, b *testing.B, name, pool, path, content string) string {
	b.Helper()
	mcs := bed.MCfg.MachineconfigurationV1().MachineConfigs()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		mc, err := mcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mc.Spec = testbed.MachineConfig(name, ignition(map[string]string{path: content})).Spec
		_, err = mcs.Update(ctx, mc, metav1.UpdateOptions{})
		return err == nil, nil // a conflict: read again
	})
	if err != nil {
		b.Fatal(err)
	}
	rendered, err := bed.RenderPool(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	return rendered
}
