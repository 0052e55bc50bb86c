package daemon

import (
	"context"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

type countingConfigs struct{ gets map[string]int }

func (c *countingConfigs) MachineConfig(_ context.Context, name string) (*mcfgv1.MachineConfig, error) {
	c.gets[name]++
	mc := &mcfgv1.MachineConfig{}
	mc.Name = name
	return mc, nil
}

func TestConfigCache(t *testing.T) {
	src := &countingConfigs{gets: map[string]int{}}
	c := &ConfigCache{Source: src, Size: 2}
	ctx := context.Background()
	for _, name := range []string{"a", "a", "b", "a", "c", "b", "a"} {
		if mc, err := c.MachineConfig(ctx, name); err != nil || mc.Name != name {
			t.Fatalf("%s: %v %v", name, mc, err)
		}
	}
	// a, b fetched; c evicts a; b hit; a fetched again.
	if src.gets["a"] != 2 || src.gets["b"] != 1 || src.gets["c"] != 1 {
		t.Errorf("GETs %v", src.gets)
	}
}
