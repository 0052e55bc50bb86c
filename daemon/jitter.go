package daemon

import (
	"context"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases"
)

// DefaultStartJitter is the daemon's --start-jitter: the first
// registrations of a whole cluster's nodes (an installation, a DaemonSet
// created on a running cluster) spread over it. Measured on the test bed
// (make bench-fleet), 1,000 daemons registering at once drew 429s from the
// API server and retries that doubled their requests.
const DefaultStartJitter = 30 * time.Second

// startDelay is how long Run waits before its first request: a random time
// in [0, StartJitter) on a node the daemon has never run on (no applied
// config kept on it), where it must register (create its MachineConfigNode,
// write its status, fetch its config: writes every node of a new cluster
// makes at once), and none where it ran before: a restarted daemon (a
// DaemonSet rollout, a reboot) only opens its watches, and an API server
// coming back finds the watches resumed by client-go, with backoff.
func (d *Daemon) startDelay() time.Duration {
	if d.StartJitter <= 0 {
		return 0
	}
	if _, err := d.Env.Host.ReadState(phases.AppliedFileName); err == nil {
		return 0
	}
	return rand.N(d.StartJitter)
}

// waitStartDelay waits startDelay, or until ctx ends (then its error).
func (d *Daemon) waitStartDelay(ctx context.Context) error {
	delay := d.startDelay()
	if delay <= 0 {
		return nil
	}
	d.Log.Info("First start on this node: waiting before registering, to spread a whole cluster's registrations",
		zap.String("node", d.API.NodeName), zap.Duration("delay", delay.Round(time.Millisecond)))
	return phases.Sleep(ctx, delay)
}
