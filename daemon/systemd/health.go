package systemd

import (
	"context"
	"fmt"
	"strings"
)

// UnitState is a unit's state for the health gate: `systemctl show -p
// LoadState,ActiveState,SubState,NRestarts`.
type UnitState struct {
	LoadState, ActiveState, SubState string
	// Restarts is a service's NRestarts (0 for other unit types).
	Restarts uint32
}

// UnitState reads the unit's state over D-Bus. A unit systemd does not know
// has LoadState "not-found", as with systemctl.
func (d *DBus) UnitState(ctx context.Context, unit string) (UnitState, error) {
	sd, _, err := d.conns(ctx)
	var st UnitState
	if err == nil {
		var props map[string]any
		props, err = sd.GetUnitPropertiesContext(ctx, unit)
		err = d.lost(err)
		if err == nil {
			st.LoadState, _ = props["LoadState"].(string)
			st.ActiveState, _ = props["ActiveState"].(string)
			st.SubState, _ = props["SubState"].(string)
		}
	}
	if err == nil && strings.HasSuffix(unit, ".service") && st.LoadState != "not-found" {
		var props map[string]any
		props, err = sd.GetUnitTypePropertiesContext(ctx, unit, "Service")
		err = d.lost(err)
		if err == nil {
			st.Restarts, _ = props["NRestarts"].(uint32)
		}
	}
	if err != nil {
		return UnitState{}, fmt.Errorf("reading the state of unit %s: %w", unit, err)
	}
	return st, nil
}
