package daemon

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/daemon/drain"
)

// Recordoner cordons the node again when the update's cordon was lifted by
// someone else (drain.Drainer.Recordon).
type Recordoner interface {
	Recordon(ctx context.Context) (did bool, err error)
}

// keepCordonEvery is how often a running update looks, in the watch cache
// (no request), for its cordon lifted behind its back.
const keepCordonEvery = time.Second

// keepCordon keeps the update's cordon while the update holds it: a node
// whose cordon annotation is there but which is schedulable was uncordoned
// by someone else (an administrator's `kubectl uncordon` mid-drain), so
// pods would land on a node about to be written or rebooted. It is cordoned
// again, with a Warning Event and a log line saying when (not who: the API
// keeps no owner of a lifted cordon, see drain.Drainer.Recordon). It
// returns the function that stops it.
func (d *Daemon) keepCordon(ctx context.Context, desired string) (stop func()) {
	if d.Cordons == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(keepCordonEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if n, ok := d.Watcher.Node(); ok && n.Annotations[drain.CordonedBy] != "" && !n.Spec.Unschedulable {
				d.recordon(ctx, n.Name, desired)
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (d *Daemon) recordon(ctx context.Context, node, desired string) {
	log := d.Log.With(zap.String("node", node), zap.String("config", desired))
	did, err := d.Cordons.Recordon(ctx)
	switch {
	case err != nil:
		log.Warn("The update's cordon was lifted by someone else; cordoning again failed (retrying)", zap.Error(err))
		return
	case !did:
		return
	}
	seen := d.Now().UTC().Format(time.RFC3339)
	log.Warn("The update's cordon was lifted by someone else; cordoned the node again", zap.String("seen", seen))
	if d.events != nil {
		d.events.Event(true, true, "CordonRestored", fmt.Sprintf("Node %s was uncordoned by someone else during the "+
			"update to %s (seen at %s); cordoned it again until the update ends", node, desired, seen))
	}
}
