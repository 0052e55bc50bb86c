package kube

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nodeconfd/nodeconfd/phases"
)

// When the API server restarts, every daemon of the cluster loses its
// watches at the same moment and client-go's reflectors try again in step
// (their backoff's jitter spreads them over about a second); the restarted
// server then checks every daemon's token at once (a GET of its
// ServiceAccount and of its Pod, while its caches are cold). So after a
// failed list or watch of its own Node or MachineConfigNode, a daemon waits
// a random time up to a window that grows with the cluster, and the fleet
// comes back at a steady pace whatever its size: ReconnectPerNode per node
// of the cluster (as last counted, CountNodes), at least MinReconnectJitter
// and at most MaxReconnectJitter. Measured with make bench-fleet on the
// test bed's API server: a 10-s window took its p99 to 1.25–3 s at 1,000
// daemons and 10 s at 2,000 (docs/fleet.md).
const (
	MinReconnectJitter = 10 * time.Second
	ReconnectPerNode   = 20 * time.Millisecond
	MaxReconnectJitter = 2 * time.Minute
)

// ReconnectJitterFor is the reconnect window for a cluster of nodes nodes.
func ReconnectJitterFor(nodes int) time.Duration {
	if nodes <= 0 {
		return MinReconnectJitter
	}
	if nodes >= int(MaxReconnectJitter/ReconnectPerNode) {
		return MaxReconnectJitter
	}
	return max(time.Duration(nodes)*ReconnectPerNode, MinReconnectJitter)
}

// reconnect spreads the next attempt of one list+watch after a failure.
// Only the reflector's goroutine calls it, but the informer may call the
// list and the watch from different goroutines over its life: hence the
// lock.
type reconnect struct {
	// jitter is the window, read at each wait (the cluster's count may
	// change).
	jitter func() time.Duration
	mu     sync.Mutex
	failed bool
}

// before waits, after a failed attempt, a random time in [0, jitter).
func (r *reconnect) before(ctx context.Context) error {
	r.mu.Lock()
	failed := r.failed
	r.mu.Unlock()
	if !failed {
		return nil
	}
	jitter := r.jitter()
	if jitter <= 0 {
		return nil
	}
	return phases.Sleep(ctx, rand.N(jitter))
}

// after notes whether the attempt failed.
func (r *reconnect) after(err error) {
	r.mu.Lock()
	r.failed = err != nil
	r.mu.Unlock()
}
