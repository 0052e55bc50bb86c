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

// waitStartDelay is what Run waits before its first request that writes: a
// random time in [0, StartJitter) on a node the daemon has never run on (no
// applied config kept on it), where it must register (create its
// MachineConfigNode, write its status, fetch its config: writes every node
// of a new cluster makes at once), and none where it ran before: a
// restarted daemon (a DaemonSet rollout, a reboot) only opens its watches,
// and an API server coming back finds the watches resumed by client-go,
// with backoff. In a cluster large enough the window is the update
// spread's instead, (nodes-1) × UpdateSpread: measured at 2,000 nodes, 30 s
// made 67 registrations a second, which the test bed's API server answered
// in up to 15 s (make bench-fleet). The nodes are counted (one LIST of one
// Node) at the same point of StartJitter first, since 2,000 such LISTs at
// once took their p99 to 3 s; the count also sizes the watches' window
// after an outage (kube.Client.ReconnectJitter). A restart reads the count
// kept on the node, or counts at once when there is none (nodecount.go).
// It returns ctx's error if ctx ends first.
func (d *Daemon) waitStartDelay(ctx context.Context) error {
	_, err := d.Env.Host.ReadState(phases.AppliedFileName)
	if ranHere := err == nil; ranHere || d.StartJitter <= 0 {
		if !ranHere || !d.keptNodeCount() {
			d.countAtStart(ctx)
		}
		return nil
	}
	u := rand.Float64()
	beforeCount, _ := firstStartDelays(u, d.StartJitter, 0)
	log := d.Log.With(zap.String("node", d.API.NodeName))
	log.Info("First start on this node: waiting before counting the cluster's nodes, to spread a whole cluster's first requests",
		zap.Duration("delay", beforeCount.Round(time.Millisecond)))
	if err := phases.Sleep(ctx, beforeCount); err != nil {
		return err
	}
	nodes := d.countAtStart(ctx)
	_, left := firstStartDelays(u, d.StartJitter, SpreadWindow(nodes, d.UpdateSpread))
	log.Info("First start on this node: waiting before registering, to spread a whole cluster's registrations",
		zap.Duration("delay", (beforeCount+left).Round(time.Millisecond)), zap.Duration("left", left.Round(time.Millisecond)),
		zap.Int("nodes", nodes))
	return phases.Sleep(ctx, left)
}

// firstStartDelays splits a first start's wait at the point u (in [0, 1))
// of the registrations' window, the larger of jitter and the spread's
// window: the count comes at point u of jitter (beforeCount), the
// registration at point u of the window (left to wait after the count).
// So both spread evenly, each over its own window.
func firstStartDelays(u float64, jitter, spread time.Duration) (beforeCount, left time.Duration) {
	beforeCount = time.Duration(u * float64(jitter))
	return beforeCount, time.Duration(u*float64(max(jitter, spread))) - beforeCount
}

// countAtStart counts the cluster's nodes (0 if that fails, with a warning).
func (d *Daemon) countAtStart(ctx context.Context) int {
	nodes, err := d.countNodes(ctx)
	if err != nil {
		d.Log.Warn("Cannot count the cluster's nodes; a first registration spreads over --start-jitter only, "+
			"and the watches' reconnect window stays at its least", zap.String("node", d.API.NodeName),
			zap.Duration("window", d.API.ReconnectJitter()), zap.Error(err))
	}
	return nodes
}
