// Package budget is the cluster-wide disruption budget, kept by the daemons
// themselves with no controller: at most N nodes are disrupted (cordoned,
// drained, rebooted) at once. The budget has N slots, coordination.k8s.io
// Leases named <name>-0 … <name>-(N-1) in the daemon's namespace. A daemon
// takes a slot before it cordons its node, renews it while it holds it, and
// deletes it once the node is uncordoned.
//
// Safety rests on optimistic concurrency: a slot is taken by creating its
// Lease, or by updating a released or expired one with the resourceVersion
// the daemon saw, so of many daemons racing for a slot exactly one wins and
// the others see a conflict. The holder is the node's name, so a daemon
// restarted mid-update (after a crash, or after the node's reboot) adopts
// its own slot again instead of taking a second one.
//
// Expiry. A holder that stops renewing loses its slot after the lease
// duration, judged on the waiter's own clock: a Lease is expired once its
// resourceVersion has not changed for a whole duration since the waiter
// first saw it. Clock skew between nodes therefore plays no part (only the
// rate of the waiter's clock does); the price is that a daemon started
// after the holder died waits a full duration before reclaiming. A node
// rebooting for its update does not renew (its daemon is down), so the
// duration must exceed the longest reboot plus the daemon's start: it
// defaults to 30 minutes. After the reboot the daemon takes its slot back
// without waiting (Keep: its own Lease, or a free slot) and renews it until
// the uncordon, also while a failed validation keeps the node cordoned and
// the update retries. Only when the outage outlasted the lease and another
// node took the slot meanwhile does the rebooted node finish what is left
// (validate, uncordon) without a slot, since waiting would only keep it
// cordoned longer: then, and only then, more than N nodes are cordoned at
// once (N holders plus the late one), for as long as its validation and
// uncordon take. The same holds for any holder that stops renewing (its
// daemon killed or cut off from the API server) for longer than the lease
// duration: its slot is reclaimed while its node may still be cordoned; by
// design, since a dead holder must not stop the rollout for good. Before
// any disruptive step (cordon, drain, write, reboot) a daemon waits until
// it holds a slot again. A node whose update fails before its reboot keeps
// its slot, renewed, while it retries. An administrator frees a slot held
// by a dead node at once by deleting its Lease.
//
// Waiting. A daemon that finds every slot held queues up. The first few
// waiters follow the budget's Leases with one watch, the others each watch
// one entry ahead of them: a handoff wakes a constant number of waiters
// and costs a constant number of requests, however many wait (see
// queue.go).
//
// Changing N. Each daemon looks only at the slots below its own N. While
// daemons run with different N (a rollout of the flag), at most the largest
// N of them are disrupted at once; after N is lowered, slots at or above
// the new N stay held until their holders release them, and no daemon
// takes them again.
package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/phases"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Label marks the budget's Leases; its value is the budget's name.
const Label = "nodeconfd.io/disruption-budget"

// Defaults of the daemon's flags.
const (
	DefaultName     = "nodeconfd-disruption"
	DefaultSlots    = 1
	DefaultDuration = 30 * time.Minute
)

// reportEvery bounds how often a waiting daemon reports who holds the slots.
const reportEvery = 5 * time.Second

// MinDuration is the shortest lease duration: the holder renews five times
// per duration.
const MinDuration = 2 * time.Second

// Config configures a Budget.
type Config struct {
	Client    kube.API
	Namespace string
	// Name names the budget; its slots are the Leases <Name>-<i>.
	Name string
	// Slots is how many nodes may be disrupted at once (N).
	Slots int
	// Holder is this node's name.
	Holder string
	// Duration is the lease duration (whole seconds); the holder renews
	// five times per duration.
	Duration time.Duration
	// Soak is how long a slot stays held after its node's uncordon (Soak,
	// soak.go); 0 gives it back at once.
	Soak time.Duration
	// TurnGrace is how long a waiter's turn in the queue lasts before the
	// others skip it as dead; 0 means DefaultTurnGrace.
	TurnGrace time.Duration
	// EntryDuration is the lease duration of the node's queue entry (whole
	// seconds; see queue.go); 0 means DefaultEntryDuration.
	EntryDuration time.Duration
	// JoinWindow is how far back a node that just queued lists the entries
	// queued before it (join.go); 0 means DefaultJoinWindow.
	JoinWindow time.Duration
	// ClockSkew bounds how far apart the nodes' clocks are, as the queue's
	// labels assume (join.go); 0 means DefaultClockSkew.
	ClockSkew time.Duration
	Log       *zap.Logger
}

// Budget is one node's view of the cluster-wide disruption budget. Its
// methods are safe for concurrent use.
type Budget struct {
	cfg Config

	mu sync.Mutex
	// held is the slot's Lease as last written by this daemon; nil when
	// the node holds no slot.
	held *coordinationv1.Lease
	// renewed is when held was last written, on this daemon's clock.
	renewed time.Time
	// synced is set once this daemon has read which slot it holds.
	synced bool
	stop   context.CancelFunc
	done   chan struct{}
}

// New checks cfg and returns the node's budget.
func New(cfg Config) (*Budget, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("disruption budget: no API client")
	case cfg.Namespace == "":
		return nil, errors.New("disruption budget: namespace is empty")
	case cfg.Name == "":
		return nil, errors.New("disruption budget: name is empty")
	case cfg.Holder == "":
		return nil, errors.New("disruption budget: node name is empty")
	case cfg.Slots < 1:
		return nil, fmt.Errorf("disruption budget %s: %d slots, want at least 1", cfg.Name, cfg.Slots)
	case cfg.Duration < MinDuration || cfg.Duration%time.Second != 0:
		return nil, fmt.Errorf("disruption budget %s: lease duration %s, want whole seconds, at least %s", cfg.Name, cfg.Duration, MinDuration)
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.TurnGrace <= 0 {
		cfg.TurnGrace = DefaultTurnGrace
	}
	if cfg.EntryDuration <= 0 {
		cfg.EntryDuration = DefaultEntryDuration
	}
	if cfg.JoinWindow <= 0 {
		cfg.JoinWindow = DefaultJoinWindow
	}
	if cfg.ClockSkew <= 0 {
		cfg.ClockSkew = DefaultClockSkew
	}
	if cfg.EntryDuration < MinDuration || cfg.EntryDuration%time.Second != 0 {
		return nil, fmt.Errorf("disruption budget %s: queue entry duration %s, want whole seconds, at least %s",
			cfg.Name, cfg.EntryDuration, MinDuration)
	}
	cfg.Log = cfg.Log.With(zap.String("node", cfg.Holder), zap.String("budget", cfg.Name))
	return &Budget{cfg: cfg}, nil
}

// Acquire returns once the node holds a slot: at once when it holds one
// already. While it waits, report receives a message naming the holders,
// on each change but at most every few seconds. The slot is renewed in the
// background until Release or Close.
func (b *Budget) Acquire(ctx context.Context, report func(message string)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	log := b.logger(ctx)
	if b.held != nil {
		if time.Since(b.renewed) < b.cfg.Duration/2 {
			return nil
		}
		// Renewals have been failing for a while: make sure the slot is
		// still ours before the caller disrupts the node.
		if err := b.renewLocked(ctx); err == nil && b.held != nil {
			return nil
		}
	}
	b.stopRenewLocked()
	if err := b.waitLocked(ctx, log, report); err != nil {
		return err
	}
	b.startRenewLocked()
	return nil
}

// Keep takes a slot without waiting and reports whether the node holds one:
// the slot it holds already, its own Lease (a daemon restarted after the
// node's reboot), or a free slot; false when others hold every slot. A slot
// kept is renewed in the background until Release or Close.
func (b *Budget) Keep(ctx context.Context) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held != nil {
		return true, nil
	}
	b.stopRenewLocked() // the renewal of a slot since lost may still run
	found, _, err := b.list(ctx)
	if err != nil {
		return false, err
	}
	now := time.Now()
	c := choose(b.cfg.Holder, observations{}.slots(b.cfg.Name, b.cfg.Slots, found, b.cfg.Duration, now), now)
	b.noteSynced(c)
	if c.Action == Wait {
		b.logger(ctx).Info("Disruption slot taken by others; going on without one", zap.Strings("holders", c.Holders))
		return false, nil
	}
	l, err := b.take(ctx, c, found)
	if lost(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	b.hold(ctx, c, found, l, now)
	b.startRenewLocked()
	return true, nil
}

// logger is the logger of the phase that called, else the budget's own.
func (b *Budget) logger(ctx context.Context) *zap.Logger {
	if l := phases.LogFrom(ctx, nil); l != nil {
		return l.Named("budget").With(zap.String("budget", b.cfg.Name))
	}
	return b.cfg.Log
}

// Release gives the node's slot back (deletes its Lease); a no-op when the
// node holds none.
func (b *Budget) Release(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopRenewLocked()
	var mine []*coordinationv1.Lease
	switch {
	case b.held != nil:
		mine = append(mine, b.held)
	case !b.synced:
		// A restarted daemon may hold a slot it does not remember.
		leases, _, err := b.list(ctx)
		if err != nil {
			return err
		}
		for _, l := range leases {
			if holderOf(l) == b.cfg.Holder && soakUntil(l, time.Now()).IsZero() { // a soak is kept
				mine = append(mine, l)
			}
		}
	}
	for _, l := range mine {
		if err := b.delete(ctx, l); err != nil {
			return err
		}
		b.cfg.Log.Info("Released disruption slot", zap.String("lease", l.Name))
	}
	b.held, b.synced = nil, true
	return nil
}

// delete deletes the Lease if it is still this node's.
func (b *Budget) delete(ctx context.Context, l *coordinationv1.Lease) error {
	leases := b.cfg.Client.Leases(b.cfg.Namespace)
	for {
		rv := l.ResourceVersion
		err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting Lease %s/%s: %w", b.cfg.Namespace, l.Name, err)
		}
		name := l.Name
		if l, err = leases.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading Lease %s/%s: %w", b.cfg.Namespace, name, err)
		}
		if holderOf(l) != b.cfg.Holder {
			return nil
		}
	}
}

// Close stops renewing without releasing: a slot held stays held, and the
// daemon's next start adopts it.
func (b *Budget) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopRenewLocked()
}

// Holding reports whether the node holds a slot, as far as this daemon knows.
func (b *Budget) Holding() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held != nil
}
