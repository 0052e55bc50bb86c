package phases

import (
	"context"
	"fmt"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// CheckEnablement checks that u is enabled, disabled or masked as the
// config says (a unit that says neither, or no units, passes); the validate
// step and the drift monitor both use it.
func CheckEnablement(ctx context.Context, units Units, u plan.Unit) error {
	if units == nil || (u.Enabled == nil && !u.Mask) {
		return nil
	}
	state, err := units.IsEnabled(ctx, u.Name)
	if err != nil {
		return fmt.Errorf("unit %s: reading its enablement: %w", u.Name, err)
	}
	want := ""
	switch {
	case u.Mask:
		want = "masked"
	case *u.Enabled:
		want = "enabled"
	default:
		want = "disabled"
	}
	// A static unit cannot be enabled, and one with no unit file
	// (not-found) is not: both are disabled as far as the config goes.
	if state != want && !(want == "disabled" && (state == "static" || state == "not-found")) {
		return fmt.Errorf("unit %s: is %s, config wants %s", u.Name, state, want)
	}
	return nil
}
