package testbed

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/render"
)

// RenderPool renders pool's MachineConfigs (those of its role) as the
// controller does, with extra fragments merged in when given, creates the
// rendered config and returns its name: the configs of tests that run no
// controller but nodes that check what they are handed.
func (b *Bed) RenderPool(ctx context.Context, pool string, extra ...*mcfgv1.MachineConfig) (string, error) {
	mc, err := b.RenderedPool(ctx, pool, extra...)
	if err != nil {
		return "", err
	}
	if err := b.CreateConfig(ctx, mc); err != nil {
		return "", err
	}
	return mc.Name, nil
}

// RenderedPool is RenderPool's rendered config, not created.
func (b *Bed) RenderedPool(ctx context.Context, pool string, extra ...*mcfgv1.MachineConfig) (*mcfgv1.MachineConfig, error) {
	list, err := b.MCfg.MachineconfigurationV1().MachineConfigs().List(ctx,
		metav1.ListOptions{LabelSelector: render.RoleLabel + "=" + pool})
	if err != nil {
		return nil, fmt.Errorf("listing pool %s's MachineConfigs: %w", pool, err)
	}
	var fragments []*mcfgv1.MachineConfig
	for i := range list.Items {
		fragments = append(fragments, &list.Items[i])
	}
	r, err := render.Render(pool, append(fragments, extra...), render.Options{})
	if err != nil {
		return nil, err
	}
	return r.Config, nil
}
