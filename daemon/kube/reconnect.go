package kube

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nodeconfd/nodeconfd/phases"
)

// ReconnectJitter bounds the random wait before the daemon lists or
// watches its own Node or MachineConfigNode again after a failed attempt.
// When the API server restarts, every daemon of the cluster loses its
// watches at the same moment and client-go's reflectors try again in step
// (their backoff's jitter spreads them over about a second); the restarted
// server then checks every daemon's token at once (a GET of its
// ServiceAccount and of its Pod, while its caches are cold) and 1,000
// daemons took its p99 to 3 s on the test bed (make bench-fleet). Spread
// over this, the fleet comes back at a pace the server takes.
const ReconnectJitter = 10 * time.Second

// reconnect spreads the next attempt of one list+watch after a failure.
// Only the reflector's goroutine calls it, but the informer may call the
// list and the watch from different goroutines over its life: hence the
// lock.
type reconnect struct {
	jitter time.Duration
	mu     sync.Mutex
	failed bool
}

// before waits, after a failed attempt, a random time in [0, jitter).
func (r *reconnect) before(ctx context.Context) error {
	r.mu.Lock()
	failed := r.failed
	r.mu.Unlock()
	if !failed || r.jitter <= 0 {
		return nil
	}
	return phases.Sleep(ctx, rand.N(r.jitter))
}

// after notes whether the attempt failed.
func (r *reconnect) after(err error) {
	r.mu.Lock()
	r.failed = err != nil
	r.mu.Unlock()
}
