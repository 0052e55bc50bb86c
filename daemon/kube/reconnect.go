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
// to go without waiting: a watch normally ends after its timeout
// (watchTimeout, 30 minutes or more), and one the old server of a restart
// opened while it shut down ends within its shutdown (2.4 s on the test
// bed), so the next attempt waits within the window as after a failure.
// Short, so that a proxy that cuts idle connections (commonly after a
// minute) does not make every reconnect wait.
const healthyWatch = 10 * time.Second

// timeoutSlack is how much sooner than its timeout a watch may end and
// still count as ended by it (the server starts its clock before the
// client does).
const timeoutSlack = 5 * time.Second

// Retry is how a watch of one object tries again after a failure: after a
// random time within Window() (nil: MinReconnectJitter), and then only if
// Ready says the API server is ready (nil: no probe); while it is not, it
// waits within the window again, so that the fleet's attempts stay spread
// over the window after the server comes back rather than all going when it
// turns ready. After maxNotReady such answers the attempt goes anyway: a
// server whose /readyz fails while it serves (one failing check) must not
// keep the daemon from its watches.
type Retry struct {
	Window func() time.Duration
	Ready  func(context.Context) bool
}

// maxNotReady is how many probes in a row may find the server not ready
// before an attempt goes anyway. During a long outage each watch so sends
// one attempt and two anonymous probes per three windows, where it sent
// three attempts: no more requests, cheaper ones.
const maxNotReady = 2

// Retry is the retry of the watches of the node's objects: within
// ReconnectJitter, probing Readiness.
func (c *Client) Retry() Retry { return Retry{Window: c.ReconnectJitter, Ready: c.Readiness.Ready} }

// reconnect spreads the next attempt of one list+watch after a failure.
// Only the reflector's goroutine calls it, but the informer may call the
// list and the watch from different goroutines over its life: hence the
// lock.
type reconnect struct {
	// retry's window is read at each wait (the cluster's count may change).
	retry  Retry
	mu     sync.Mutex
	failed bool
	// opened is when the last attempt, a watch, opened (zero after a list),
	// and timeout that watch's timeout.
	opened  time.Time
	timeout time.Duration
}

func newReconnect(retry Retry) *reconnect {
	if retry.Window == nil {
		retry.Window = func() time.Duration { return MinReconnectJitter }
	}
	return &reconnect{retry: retry}
}

// before waits before the next attempt:
//   - after a failed attempt, or a watch that lived less than healthyWatch,
//     a random time in [0, window), and again while the server is not ready
//     (up to maxNotReady times);
//   - after a watch that lived but ended before its timeout (the server
//     closed it: it may be shutting down), only if a probe finds the server
//     not ready, and then as after a failure. The first attempt after an
//     API server's shutdown would otherwise go at once and, the new
//     server's port open before it serves, wait in its accept queue to
//     reach it all together with the rest of the fleet's, while it starts.
//
// After a watch that ended at its timeout, or a list, the attempt goes at
// once.
func (r *reconnect) before(ctx context.Context) error {
	r.mu.Lock()
	lived := time.Since(r.opened)
	watched := !r.opened.IsZero()
	wait := r.failed || watched && lived < healthyWatch
	early := watched && lived < r.timeout-timeoutSlack
	r.mu.Unlock()
	if !wait && (!early || r.retry.Ready == nil || r.retry.Ready(ctx)) {
		return nil
	}
	for notReady := 0; ; notReady++ {
		window := r.retry.Window()
		if window <= 0 {
			return nil
		}
		if err := phases.Sleep(ctx, rand.N(window)); err != nil {
			return err
		}
		if r.retry.Ready == nil || notReady == maxNotReady || r.retry.Ready(ctx) {
			return nil
		}
	}
}

// after notes whether the attempt failed and, for a watch that opened
// (timeout > 0), when, and its timeout.
func (r *reconnect) after(err error, timeout time.Duration) {
	r.mu.Lock()
	r.failed = err != nil
	r.opened, r.timeout = time.Time{}, 0
	if err == nil && timeout > 0 {
		r.opened, r.timeout = time.Now(), timeout
	}
	r.mu.Unlock()
}
