package phases_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// A unit the config enables that is found disabled (or masked, or a masked
// one found unmasked) fails the on-disk check; a unit that says nothing is
// not checked; without systemd nothing is.
func TestCheckEnablement(t *testing.T) {
	yes, no := true, false
	units := []plan.Unit{
		{Name: "on.service", Enabled: &yes},
		{Name: "off.service", Enabled: &no},
		{Name: "masked.service", Mask: true},
		{Name: "any.service"},
	}
	sd := &systemdtest.Fake{}
	sd.SetEnabled("on.service", "enabled")
	sd.SetEnabled("off.service", "static")
	sd.SetEnabled("masked.service", "masked")
	sd.SetEnabled("any.service", "masked")
	ctx := context.Background()
	check := func(u phases.Units) []string {
		var errs []string
		for _, unit := range units {
			if err := phases.CheckEnablement(ctx, u, unit); err != nil {
				errs = append(errs, err.Error())
			}
		}
		return errs
	}
	if errs := check(sd); len(errs) > 0 {
		t.Fatalf("matching node: %v", errs)
	}
	sd.SetEnabled("on.service", "disabled")
	sd.SetEnabled("masked.service", "enabled")
	got := strings.Join(check(sd), "; ")
	if !strings.Contains(got, "unit on.service: is disabled, config wants enabled") ||
		!strings.Contains(got, "unit masked.service: is enabled, config wants masked") {
		t.Fatalf("drifted node: %s", got)
	}
	if errs := check(nil); len(errs) > 0 {
		t.Errorf("without systemd: %v", errs)
	}
}
