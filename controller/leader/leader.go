// Package leader elects one leader among the controller's replicas on a
// coordination/v1 Lease, with the semantics of client-go's leaderelection:
// a candidate takes the Lease when its holder has not renewed it for the
// lease duration as the candidate observed it (its own clock, never the
// holder's), the leader renews it every retry period and stops leading when
// no renewal succeeded for the renew deadline, which is shorter than the
// lease duration, so a leader that stops is never still writing once
// another has taken over. Writes are optimistic (the Lease's
// resourceVersion), so two candidates never both win one round.
//
// It is its own code rather than client-go's leaderelection because that
// package links client-go's generated clientset (every API group's types)
// into the one binary the daemon also runs from; TestNoClientsetInBinary in
// cmd/nodeconfd guards that reason.
package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults as client-go's and the upstream controllers' (15 s, 10 s, 2 s).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Config is one candidate.
type Config struct {
	Leases    kubeapi.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
	Namespace string
	Name      string
	// Identity is this candidate's, unique among the replicas (the pod's
	// name).
	Identity                                  string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Now                                       func() time.Time
	Log                                       *zap.Logger
}

// elector is one candidate's view of the Lease.
type elector struct {
	c Config
	// observed is the Lease as last read and when this candidate first saw
	// its current holder and renewal: expiry is judged on this clock.
	observed     coordinationv1.LeaseSpec
	observedTime time.Time
	// renewedAt is when the last successful write of the Lease was sent.
	renewedAt time.Time
}

// Run campaigns until ctx ends. Each time it wins it calls lead with a
// context that ends when leadership is lost or ctx ends, and returns
// ErrLost once lead returned after a loss (a controller exits then, as
// client-go's callers do: its caches may hold decisions of another
// leader's time). On ctx's end the Lease is given up, so that another
// replica takes over at once.
func Run(ctx context.Context, c Config, lead func(ctx context.Context)) error {
	if c.LeaseDuration <= c.RenewDeadline || c.RenewDeadline <= c.RetryPeriod || c.RetryPeriod <= 0 {
		return fmt.Errorf("leader election: want lease duration > renew deadline > retry period > 0 (%s, %s, %s)",
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	}
	// The Lease holds whole seconds: 900ms would be written as 0, which
	// every candidate reads as expired.
	if c.LeaseDuration < time.Second || c.LeaseDuration%time.Second != 0 {
		return fmt.Errorf("leader election: the lease duration %s is not whole seconds", c.LeaseDuration)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	e := &elector{c: c}
	if !e.acquire(ctx) {
		return ctx.Err()
	}
	c.Log.Info("Became the leader", zap.String("lease", c.Namespace+"/"+c.Name), zap.String("identity", c.Identity))
	leadCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lead(leadCtx)
	}()
	e.renew(leadCtx)
	cancel()
	<-done
	if ctx.Err() != nil {
		e.release()
		return ctx.Err()
	}
	c.Log.Info("Lost the leadership", zap.String("lease", c.Namespace+"/"+c.Name), zap.String("identity", c.Identity))
	return ErrLost
}

// ErrLost is Run's error when the leadership was lost.
var ErrLost = errors.New("leader election: leadership lost")

// acquire tries every retry period until it holds the Lease or ctx ends.
func (e *elector) acquire(ctx context.Context) bool {
	for {
		ok, err := e.tryAcquireOrRenew(ctx)
		if err != nil && ctx.Err() == nil {
			e.c.Log.Info("Could not take the leader Lease; trying again", zap.String("lease", e.c.Name), zap.Error(err))
		}
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(e.c.RetryPeriod):
		}
	}
}

// renew renews every retry period and stops leading once no renewal has
// succeeded within the renew deadline, counted from when the last good
// renewal was sent: every attempt is cut at that deadline, so a hung
// request cannot keep a leader past it (another may take over after the
// lease duration on its own clock). A Lease found held by another stops
// it at once.
func (e *elector) renew(ctx context.Context) {
	for {
		deadline := e.renewedAt.Add(e.c.RenewDeadline)
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(e.c.RetryPeriod, deadline.Sub(e.c.Now()))):
		}
		if !e.c.Now().Before(deadline) {
			e.c.Log.Info("No renewal of the leader Lease within the renew deadline", zap.String("lease", e.c.Name),
				zap.Duration("renewDeadline", e.c.RenewDeadline))
			return
		}
		rctx, cancel := context.WithDeadline(ctx, deadline)
		ok, err := e.tryAcquireOrRenew(rctx)
		cancel()
		switch {
		case ok:
		case ctx.Err() != nil:
			return
		case err == nil:
			e.c.Log.Info("The leader Lease is held by another candidate", zap.String("lease", e.c.Name),
				zap.String("holder", deref(e.observed.HolderIdentity)))
			return
		default:
			e.c.Log.Info("Could not renew the leader Lease", zap.String("lease", e.c.Name), zap.Error(err))
		}
	}
}

// tryAcquireOrRenew is one round: create the Lease, renew it, or take it
// over once expired. It reports whether this candidate holds it now.
func (e *elector) tryAcquireOrRenew(ctx context.Context) (bool, error) {
	now := e.c.Now()
	l, err := e.c.Leases.Get(ctx, e.c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.c.Name, Namespace: e.c.Namespace}}
		e.take(l, now, true)
		if _, err := e.c.Leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
			return false, fmt.Errorf("creating Lease %s/%s: %w", e.c.Namespace, e.c.Name, err)
		}
		e.observe(l.Spec, now)
		e.renewedAt = now
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading Lease %s/%s: %w", e.c.Namespace, e.c.Name, err)
	}
	if !sameSpec(e.observed, l.Spec) {
		e.observe(l.Spec, now)
	}
	holder := deref(l.Spec.HolderIdentity)
	if holder != "" && holder != e.c.Identity && now.Before(e.observedTime.Add(duration(l.Spec))) {
		return false, nil // held by another, not expired on this clock
	}
	l = l.DeepCopy()
	e.take(l, now, false)
	if _, err := e.c.Leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("updating Lease %s/%s: %w", e.c.Namespace, e.c.Name, err)
	}
	e.observe(l.Spec, now)
	e.renewedAt = now
	return true, nil
}

// take makes l this candidate's, renewed now; a change of holder of an
// existing Lease (a released one too) counts a transition, as client-go
// counts them, and sets the acquire time.
func (e *elector) take(l *coordinationv1.Lease, now time.Time, created bool) {
	mt := metav1.NewMicroTime(now)
	secs := int32(e.c.LeaseDuration / time.Second)
	if deref(l.Spec.HolderIdentity) != e.c.Identity {
		if !created {
			n := int32(0)
			if l.Spec.LeaseTransitions != nil {
				n = *l.Spec.LeaseTransitions
			}
			n++
			l.Spec.LeaseTransitions = &n
		}
		l.Spec.AcquireTime = &mt
	}
	id := e.c.Identity
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &id, &secs, &mt
}

// release gives the Lease up (holder cleared, a one-second duration), if
// still held: the next candidate takes it without waiting for expiry.
func (e *elector) release() {
	ctx, cancel := context.WithTimeout(context.Background(), e.c.RenewDeadline)
	defer cancel()
	l, err := e.c.Leases.Get(ctx, e.c.Name, metav1.GetOptions{})
	if err != nil || deref(l.Spec.HolderIdentity) != e.c.Identity {
		return
	}
	l = l.DeepCopy()
	empty, one, now := "", int32(1), metav1.NewMicroTime(e.c.Now())
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &empty, &one, &now
	if _, err := e.c.Leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		e.c.Log.Info("Could not give up the leader Lease; it expires by itself", zap.String("lease", e.c.Name), zap.Error(err))
	}
}

func (e *elector) observe(s coordinationv1.LeaseSpec, now time.Time) {
	e.observed, e.observedTime = *s.DeepCopy(), now
}

// sameSpec compares what decides expiry: the holder and its last renewal.
func sameSpec(a, b coordinationv1.LeaseSpec) bool {
	return deref(a.HolderIdentity) == deref(b.HolderIdentity) && a.RenewTime.Equal(b.RenewTime) &&
		duration(a) == duration(b)
}

func duration(s coordinationv1.LeaseSpec) time.Duration {
	if s.LeaseDurationSeconds == nil {
		return 0
	}
	return time.Duration(*s.LeaseDurationSeconds) * time.Second
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
