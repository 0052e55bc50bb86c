package drift

import (
	"context"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// A unit the config enables that is found disabled (or masked, or a masked
// one found unmasked) is drift; a unit that says nothing is not checked.
func TestCheckUnitsEnablement(t *testing.T) {
	yes, no := true, false
	cfg := plan.Config{Units: map[string]plan.Unit{
		"on.service":     {Name: "on.service", Enabled: &yes},
		"off.service":    {Name: "off.service", Enabled: &no},
		"masked.service": {Name: "masked.service", Mask: true},
		"any.service":    {Name: "any.service"},
	}}
	sd := &systemd.Fake{}
	sd.SetEnabled("on.service", "enabled")
	sd.SetEnabled("off.service", "static")
	sd.SetEnabled("masked.service", "masked")
	sd.SetEnabled("any.service", "masked")
	ctx := context.Background()
	if err := CheckUnits(ctx, sd, cfg); err != nil {
		t.Fatalf("matching node: %v", err)
	}
	sd.SetEnabled("on.service", "disabled")
	sd.SetEnabled("masked.service", "enabled")
	err := CheckUnits(ctx, sd, cfg)
	if err == nil || !strings.Contains(err.Error(), "unit on.service: is disabled, config wants enabled") ||
		!strings.Contains(err.Error(), "unit masked.service: is enabled, config wants masked") {
		t.Fatalf("drifted node: %v", err)
	}
	if err := CheckUnits(ctx, nil, cfg); err != nil {
		t.Errorf("without systemd: %v", err)
	}
}
