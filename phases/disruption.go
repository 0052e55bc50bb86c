package phases

import (
	"context"
	"fmt"
)

// holdSlot is the Wait of the disruptive phases (cordon, drain, write,
// reboot) of an update that drains the node: it returns once the node
// holds a cluster-wide disruption slot, at once when it holds one already.
// Checking before each of them, not only before the cordon, keeps a daemon
// restarted mid-update (whose slot may have expired and been taken) from
// disrupting its node further without a slot. An update that needs no
// drain takes no slot.
func holdSlot(ctx context.Context, d Data) error {
	b := d.Disruption()
	if b == nil || !d.Update().Action.NeedsDrain() {
		return nil
	}
	if err := b.Acquire(ctx, func(msg string) { _ = d.Report(ctx, msg) }); err != nil {
		return fmt.Errorf("waiting for a disruption slot: %w", err)
	}
	return nil
}

// rebootSlot is the reboot's Wait: a slot before the reboot is asked for,
// none once the node has rebooted. The disruption is then over, and
// waiting for a slot taken meanwhile would only keep the node cordoned.
func rebootSlot(ctx context.Context, d Data) error {
	if from := d.Progress().RebootFromBootID; from != "" && d.Disruption() != nil {
		boot, err := d.Units().BootID(ctx)
		if err != nil {
			return fmt.Errorf("reading the boot ID: %w", err)
		}
		if boot != from {
			return nil
		}
	}
	return holdSlot(ctx, d)
}

// releaseSlot gives back the node's disruption slot, if it holds one.
func releaseSlot(ctx context.Context, d Data) error {
	b := d.Disruption()
	if b == nil {
		return nil
	}
	if err := b.Release(ctx); err != nil {
		return fmt.Errorf("releasing the disruption slot: %w", err)
	}
	return nil
}
