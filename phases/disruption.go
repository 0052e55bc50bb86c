package phases

import (
	"context"
	"fmt"

	"go.uber.org/zap"
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
	for {
		if err := b.Acquire(ctx, func(msg string) { _ = d.Report(ctx, msg) }); err != nil {
			return fmt.Errorf("waiting for a disruption slot: %w", err)
		}
		// The slot may come from a node whose health gate failed this config.
		if again, err := failedWhileWaiting(ctx, d); err != nil || !again {
			return err
		}
	}
}

// rebootSlot is the reboot's Wait: a slot before the reboot is asked for;
// once the node has rebooted, the slot is kept (keepSlot) but not waited
// for. The disruption is then over, and waiting for a slot taken meanwhile
// would only keep the node cordoned.
func rebootSlot(ctx context.Context, d Data) error {
	if from := d.Progress().RebootFromBootID; from != "" && d.Disruption() != nil {
		boot, err := d.Units().BootID(ctx)
		if err != nil {
			return fmt.Errorf("reading the boot ID: %w", err)
		}
		if boot != from {
			return keepSlot(ctx, d)
		}
	}
	return holdSlot(ctx, d)
}

// keepSlot is the Wait of the steps after the reboot (the reboot's own
// check, validate) of an update that drains the node: it takes the node's
// slot back without waiting (its own Lease, else a free slot) so that the
// slot stays held and renewed until the uncordon, also while a failed
// validation keeps the node cordoned. When others hold every slot (this
// node's lapsed during a long outage) the update goes on without one. A
// failure to read the slots is logged, not fatal: the node is disrupted
// already, and stopping would only keep it so.
func keepSlot(ctx context.Context, d Data) error {
	b := d.Disruption()
	if b == nil || !d.Update().Action.NeedsDrain() {
		return nil
	}
	held, err := b.Keep(ctx)
	log := LogFrom(ctx, zap.NewNop())
	switch {
	case err != nil:
		log.Warn("Cannot check the disruption slot; going on", zap.Error(err))
	case !held:
		log.Warn("Disruption slot lost while the node was down; finishing without one")
	}
	return nil
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
