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

// healthyWatch is how long a watch must have lived for the attempt after it
// to go at once: a watch ends normally after its timeout (watchTimeout,
// 30 minutes or more), and one the old server of a restart opened while it
// shut down ends within its shutdown (2.4 s on the test bed), so the next
// attempt waits within the window as after a failure. Short, so that a
// proxy that cuts idle connections (commonly after a minute) does not make
// every reconnect wait.
const healthyWatch = 10 * time.Second

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
	// opened is when the last attempt, a watch, opened; zero after a list.
	opened time.Time
}

// before waits a random time in [0, jitter) after a failed attempt, or a
// watch that lived less than healthyWatch.
func (r *reconnect) before(ctx context.Context) error {
	r.mu.Lock()
	wait := r.failed || !r.opened.IsZero() && time.Since(r.opened) < healthyWatch
	r.mu.Unlock()
	if !wait {
		return nil
	}
	jitter := r.jitter()
	if jitter <= 0 {
		return nil
	}
	return phases.Sleep(ctx, rand.N(jitter))
}

// after notes whether the attempt failed and, for a watch that opened,
// when.
func (r *reconnect) after(err error, watch bool) {
	r.mu.Lock()
	r.failed = err != nil
	r.opened = time.Time{}
	if err == nil && watch {
		r.opened = time.Now()
	}
	r.mu.Unlock()
}
