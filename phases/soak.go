package phases

import (
	"context"
	"fmt"
)

// Soaker is a disruption budget that can keep the slot of a node just
// uncordoned for a soak time, so that the next node starts only after it
// (daemon/budget's Soak).
type Soaker interface {
	Soak(ctx context.Context) error
}

// endSlot ends the update's disruption at its uncordon: the slot is kept
// for the soak time when the budget has one (Soaker), else given back.
func endSlot(ctx context.Context, d Data) error {
	b := d.Disruption()
	if b == nil {
		return nil
	}
	s, ok := b.(Soaker)
	if !ok {
		return releaseSlot(ctx, d)
	}
	if err := s.Soak(ctx); err != nil {
		return fmt.Errorf("ending the disruption (soak time): %w", err)
	}
	return nil
}
