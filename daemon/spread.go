package daemon

import (
	"context"
	"hash/fnv"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases"
)

// DefaultUpdateSpread is the daemon's --update-spread: per node of the
// cluster, how long the start of a new update may be put off. A rendered
// config reaches a whole pool at once; without the spread every node
// prepares at the same moment (status writes, the node's state, Events,
// the config fetched: about ten requests each, three of
// them MachineConfigNode writes at ~10 ms of API server CPU each) and the
// API server answers the burst late or with 429s. Spread over 100 ms per
// node, the updates start at about 10 nodes a second whatever the
// cluster's size: measured with make bench-fleet at 1,000 nodes on an API
// server of two cores shared with the whole simulated fleet (the Lease
// budget's roll, before issue 26), its p99 stays at 400 ms through the
// roll (at 50 ms per node it reached 4 s while the starts went on).
//
// It is off by default since the pool controller paces the rollout (issue
// 26): the window is counted from the cluster's size, not from the nodes
// handed the config at once, so under the controller every handoff paid it
// (make bench-fleet at N = 100, S = 10: 2.75 times the bound with 100 ms,
// 1.21 without). Set it (100ms) where configs are set by hand on many
// nodes at once.
const DefaultUpdateSpread = 0

// SuggestedUpdateSpread is the per-node spread for configs set by hand on
// a whole pool at once, measured as above.
const SuggestedUpdateSpread = 100 * time.Millisecond

// MaxUpdateSpread caps the window the updates spread over (reached at
// 3,000 nodes by default), so that even a very large cluster's last node
// starts its update within five minutes: every update waits for its
// start, one that needs no drain or reboot too.
const MaxUpdateSpread = 5 * time.Minute

// spread is the start of a new update the daemon puts off.
type spread struct {
	config string
	until  time.Time
	// waiting: the metrics show the wait (phases.WaitUpdateSpread).
	waiting bool
}

// spreadDelay is how long node's update to config waits to start in a
// cluster of nodes Nodes, perNode apart: a point of the window
// min((nodes-1) × perNode, MaxUpdateSpread) chosen by a hash of the node's
// and the config's names, so the nodes spread evenly over it (and a test
// can tell where a node starts). A lone node (nodes ≤ 1) and perNode ≤ 0
// do not wait.
func spreadDelay(node, config string, nodes int, perNode time.Duration) time.Duration {
	return time.Duration(SpreadPoint(node, config) * float64(SpreadWindow(nodes, perNode)))
}

// SpreadWindow is the window the starts of an update spread over: min((nodes-1) × perNode, MaxUpdateSpread), 0 for a lone
// node or perNode ≤ 0.
func SpreadWindow(nodes int, perNode time.Duration) time.Duration {
	if nodes <= 1 || perNode <= 0 {
		return 0
	}
	if n := time.Duration(nodes - 1); perNode < MaxUpdateSpread/n {
		return perNode * n
	}
	return MaxUpdateSpread
}

// SpreadPoint is where in the spread's window node's update to config
// starts, as a fraction in [0, 1): an FNV-1a hash of the two names.
func SpreadPoint(node, config string) float64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	h.Write([]byte(config))
	// The top 53 bits as a fraction: exact in a float64.
	return float64(h.Sum64()>>11) / (1 << 53)
}

// spreadWait returns how much longer the update from current to desired
// waits before it starts, 0 once it may start. Only a change the running
// daemon sees is spread: an update already under way (a progress record
// on the node), a daemon's first pass (a restart: the DaemonSet's rollout
// spreads those), a retry of the same config and a node going back to the
// config it runs start at once. The window is counted from the cluster's
// size (one LIST of one Node); if that fails the update starts at once,
// as it would without a spread.
func (d *Daemon) spreadWait(ctx context.Context, current, desired string, underWay func() bool) time.Duration {
	left := d.spreadLeft(ctx, current, desired, underWay)
	switch {
	case left > 0 && !d.spread.waiting:
		d.waiting(phases.WaitUpdateSpread)
	case left == 0 && d.spread.waiting:
		d.waiting("") // started, or no longer to start (back to its config)
	}
	d.spread.waiting = left > 0
	return left
}

// spreadLeft is spreadWait's decision; it counts the nodes once per config.
// underWay (a read of the node's progress record) is asked last, so an
// idle pass reads nothing.
func (d *Daemon) spreadLeft(ctx context.Context, current, desired string, underWay func() bool) time.Duration {
	if d.UpdateSpread <= 0 || d.mcn == nil || desired == current || underWay() {
		return 0
	}
	if d.spread.config != desired {
		d.spread = spread{config: desired, until: d.Now(), waiting: d.spread.waiting}
		nodes, err := d.countNodes(ctx)
		log := d.Log.With(zap.String("node", d.API.NodeName), zap.String("config", desired))
		if err != nil {
			log.Warn("Cannot count the cluster's nodes; starting the update without spreading it", zap.Error(err))
			return 0
		}
		delay := spreadDelay(d.API.NodeName, desired, nodes, d.UpdateSpread)
		d.spread.until = d.spread.until.Add(delay)
		if delay > 0 {
			log.Info("Spreading the start of the update over the cluster's nodes",
				zap.Duration("startsIn", delay.Round(time.Millisecond)), zap.Int("nodes", nodes),
				zap.Duration("perNode", d.UpdateSpread))
		}
	}
	return max(d.spread.until.Sub(d.Now()), 0)
}
