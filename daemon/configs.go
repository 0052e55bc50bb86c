package daemon

import (
	"context"
	"sync"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/phases"
)

// ConfigCache remembers the last few rendered MachineConfigs fetched, so the
// config the node runs (fetched once for the drift monitor) is not fetched
// again as the "current" side of the next update. Rendered configs are
// immutable: a new config gets a new name.
type ConfigCache struct {
	Source phases.Configs
	// Size bounds the cache; 2 holds the current and the desired config.
	Size int

	mu    sync.Mutex
	order []string
	byKey map[string]*mcfgv1.MachineConfig
}

// MachineConfig returns the named config from the cache or the API server.
func (c *ConfigCache) MachineConfig(ctx context.Context, name string) (*mcfgv1.MachineConfig, error) {
	c.mu.Lock()
	if mc, ok := c.byKey[name]; ok {
		c.mu.Unlock()
		return mc, nil
	}
	c.mu.Unlock()
	mc, err := c.Source.MachineConfig(ctx, name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*mcfgv1.MachineConfig{}
	}
	if _, ok := c.byKey[name]; !ok {
		c.order = append(c.order, name)
	}
	c.byKey[name] = mc
	for len(c.order) > max(c.Size, 1) {
		delete(c.byKey, c.order[0])
		c.order = c.order[1:]
	}
	return mc, nil
}
