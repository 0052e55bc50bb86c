package daemon

import (
	"context"
	"fmt"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
)

// awaitFirstConfig is a pass on a node that no one has handed a config
// yet: a node that just joined, or one of a cluster nodeconfd was just
// installed on. As soon as the node's pool has a rendered config, the
// daemon registers the node's MachineConfigNode with it as the desired
// config: the controller hands a fresh node its first config only once its
// daemon has registered (a node without a daemon would hold the pool's
// room while nothing acts on it), and `kubectl get machineconfignodes`
// lists the node from then on. What it waits for is logged once, not at
// every pass.
func (d *Daemon) awaitFirstConfig(ctx context.Context, pool string, poolErr error, current string) (time.Duration, error) {
	var why string
	switch target := poolTarget(d.Watcher.Pools(), pool); {
	case poolErr != nil:
		why = poolErr.Error() + "; the controller hands it no config"
	case target == "":
		why = fmt.Sprintf("pool %s has no rendered config yet", pool)
	default:
		d.pool = pool
		if err := d.ensureMCN(ctx, current, target); err != nil {
			return d.nextDelay(), err
		}
		why = fmt.Sprintf("registered in pool %s; the controller hands it %s in its turn", pool, target)
	}
	if why != d.waitingFor {
		d.waitingFor = why
		d.Log.Info("Node has no desiredConfig annotation yet; waiting", zap.String("node", d.node.Name),
			zap.String("pool", pool), zap.String("why", why))
	}
	return 0, nil
}

// poolTarget is the rendered config the named pool rolls out
// (spec.configuration.name, which the controller sets), "" when the pool
// is unknown or has none yet.
func poolTarget(all []*mcfgv1.MachineConfigPool, name string) string {
	for _, p := range all {
		if p.Name == name {
			return p.Spec.Configuration.Name
		}
	}
	return ""
}
