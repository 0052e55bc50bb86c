package daemon

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/names"
)

// Recordoner cordons the node again when the update's cordon was lifted by
// someone else (drain.Drainer.Recordon).
// It also takes off a steering taint a killed daemon left (clearSteer).
type Recordoner interface {
	Recordon(ctx context.Context) (did bool, err error)
	Steer(ctx context.Context, on bool) error
}

// keepCordon keeps the update's cordon while the update holds it: a node
// whose cordon annotation is there but which is schedulable was uncordoned
// by someone else (an administrator's `kubectl uncordon` mid-drain), so
// pods would land on a node about to be written or rebooted. It is cordoned
// again, with a Warning Event and a log line saying when (not who: the API
// keeps no owner of a lifted cordon, see drain.Drainer.Recordon). The
// update's stop watcher looks every second, in the watch cache (no
// request): it returns what the watcher runs (engine.Signals.Also), nil
// without a Recordoner.
func (d *Daemon) keepCordon(desired string) []func(context.Context) {
	if d.Cordons == nil {
		return nil
	}
	return []func(context.Context){func(ctx context.Context) {
		if n, ok := d.Watcher.Node(); ok && n.Annotations[names.CordonedBy] != "" && !n.Spec.Unschedulable {
			d.recordon(ctx, n.Name, desired)
		}
	}}
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

// clearSteer takes off the steering taint (drain.SteerTaintKey) when the
// node carries it between two passes: only a gate that waits puts it on,
// and the gate takes it off on every way out, so one seen here was left by
// a daemon killed mid-wait (or the cache has not seen the gate's removal
// yet: then Steer finds it gone and writes nothing). A gate that waits
// again puts it back. It costs no request while the cache shows no taint.
func (d *Daemon) clearSteer(ctx context.Context, node *corev1.Node) {
	if d.Cordons == nil || !drain.HasSteerTaint(node) {
		return
	}
	if err := d.Cordons.Steer(ctx, false); err != nil {
		d.Log.Warn("Cannot take off the steering taint a previous run left", zap.String("node", node.Name), zap.Error(err))
		return
	}
	d.Log.Info("Took off the steering taint a previous run left", zap.String("node", node.Name))
}
