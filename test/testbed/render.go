package testbed

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/render"
)

// RenderPool renders pool's MachineConfigs (those of its role) as the
// controller does, with extra fragments merged in when given (a config
// the controller's token could make, named for its content), creates the
// rendered config and returns its name: the configs of tests that run no
// controller but nodes that check what they are handed.
func (b *Bed) RenderPool(ctx context.Context, pool string, extra ...*mcfgv1.MachineConfig) (string, error) {
	list, err := b.MCfg.MachineconfigurationV1().MachineConfigs().List(ctx,
		metav1.ListOptions{LabelSelector: render.RoleLabel + "=" + pool})
	if err != nil {
		return "", fmt.Errorf("listing pool %s's MachineConfigs: %w", pool, err)
	}
	var fragments []*mcfgv1.MachineConfig
	for i := range list.Items {
		fragments = append(fragments, &list.Items[i])
	}
	r, err := render.Render(pool, append(fragments, extra...), render.Options{})
	if err != nil {
		return "", err
	}
	if err := b.CreateConfig(ctx, r.Config); err != nil {
		return "", err
	}
	return r.Config.Name, nil
}
