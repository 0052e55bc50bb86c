package daemon

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/render"
)

// Provenance is phases.Provenance on the API server: the node's pool as
// the watch last saw it, its MachineConfigs listed by its
// machineConfigSelector, rendered with the controller's options
// (render.Verify). Only the administrator writes the fragments and the
// pool's selector; the controller's admission policy keeps its token from
// both.
type Provenance struct {
	// Pools are the cluster's pools (the watch's).
	Pools func() []*mcfgv1.MachineConfigPool
	// Fragments lists the MachineConfigs a selector selects
	// (kube.Client.Fragments).
	Fragments func(ctx context.Context, selector string) ([]*mcfgv1.MachineConfig, error)
	// Options must be the controller's: its base OS images
	// (--base-os-image-url, --base-os-extensions-image) and the limits.
	Options render.Options
}

// For is the check of pool's configs; nil when p is nil (no check).
func (p *Provenance) For(pool string) phases.Provenance {
	if p == nil {
		return nil
	}
	return poolProvenance{p: p, pool: pool}
}

type poolProvenance struct {
	p    *Provenance
	pool string
}

func (v poolProvenance) Verify(ctx context.Context, mc *mcfgv1.MachineConfig) error {
	var pool *mcfgv1.MachineConfigPool
	for _, p := range v.p.Pools() {
		if p.Name == v.pool {
			pool = p
		}
	}
	if pool == nil {
		return fmt.Errorf("checking MachineConfig %q: its pool %s does not exist", mc.Name, v.pool)
	}
	selector, selects, err := render.SelectorFor(pool.Spec.MachineConfigSelector)
	if err != nil || !selects {
		// render.Verify says why: an empty selector selects nothing.
		return render.Verify(v.pool, pool.Spec.MachineConfigSelector, nil, mc, v.p.Options)
	}
	fragments, err := v.p.Fragments(ctx, selector)
	if err != nil {
		return fmt.Errorf("checking MachineConfig %q: %w", mc.Name, err)
	}
	return render.Verify(v.pool, pool.Spec.MachineConfigSelector, fragments, mc, v.p.Options)
}
