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
// coming back finds the watches resumed by client-go, with backoff. In a
// cluster large enough the window is the update spread's instead,
// (nodes-1) × UpdateSpread (one LIST of one Node counts them): measured at
// 2,000 nodes, 30 s made 67 registrations a second, which the test bed's
// API server answered in up to 15 s (make bench-fleet). The count also
// sizes the watches' window after an outage (kube.Client.ReconnectJitter):
// a restart reads the count kept on the node, or counts when there is none
// (nodecount.go).
func (d *Daemon) startDelay(ctx context.Context) time.Duration {
	_, err := d.Env.Host.ReadState(phases.AppliedFileName)
	ranHere := err == nil
	nodes, kept := 0, false
	if ranHere {
		nodes, kept = d.keptNodeCount()
	}
	if !kept {
		if nodes, err = d.countNodes(ctx); err != nil {
			d.Log.Warn("Cannot count the cluster's nodes; a first registration spreads over --start-jitter only, "+
				"and the watches' reconnect window stays at its least", zap.String("node", d.API.NodeName),
				zap.Duration("window", d.API.ReconnectJitter()), zap.Error(err))
		}
	}
	if ranHere || d.StartJitter <= 0 {
		return 0
	}
	return rand.N(max(d.StartJitter, spreadWindow(nodes, d.UpdateSpread)))
}

// waitStartDelay waits startDelay, or until ctx ends (then its error).
func (d *Daemon) waitStartDelay(ctx context.Context) error {
	delay := d.startDelay(ctx)
	if delay <= 0 {
		return nil
	}
	d.Log.Info("First start on this node: waiting before registering, to spread a whole cluster's registrations",
		zap.String("node", d.API.NodeName), zap.Duration("delay", delay.Round(time.Millisecond)))
	return phases.Sleep(ctx, delay)
}
