package budget

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The renewal of the slot held, in the background from Acquire (or Keep)
// to Release or Close.

// A failed renewal is retried after renewRetryFirst, doubling up to
// renewRetryMax (but never later than the next regular renewal): an API
// server outage must not cost the slot for lack of a timely retry.
const (
	renewRetryFirst = time.Second
	renewRetryMax   = 15 * time.Second
)

func (b *Budget) startRenewLocked() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	b.stop, b.done = cancel, done
	go b.renewLoop(ctx, done)
}

// stopRenewLocked stops the renewal goroutine and waits for it. The
// goroutine takes b.mu, so it is released while waiting.
func (b *Budget) stopRenewLocked() {
	if b.stop == nil {
		return
	}
	stop, done := b.stop, b.done
	b.stop, b.done = nil, nil
	stop()
	b.mu.Unlock()
	<-done
	b.mu.Lock()
}

// renewLoop renews the held slot every renewInterval; a failed renewal is
// retried within seconds (renewRetryFirst, doubling), not a whole interval
// later.
func (b *Budget) renewLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	every := renewInterval(b.cfg.Duration)
	retry := time.Duration(0)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next := every
		b.mu.Lock()
		if ctx.Err() == nil && b.held != nil {
			if err := b.renewLocked(ctx); err != nil && ctx.Err() == nil {
				retry = min(max(2*retry, renewRetryFirst), renewRetryMax, every)
				next = retry
				b.cfg.Log.Warn("Cannot renew disruption slot; retrying", zap.Error(err), zap.Duration("retryIn", retry))
			} else {
				retry = 0
			}
		}
		b.mu.Unlock()
		t.Reset(next)
	}
}

// renewLocked writes a new renewTime to the held Lease. A conflict means the
// Lease changed under us: still ours (an earlier write whose answer was
// lost) it is renewed again, someone else's and the slot is lost.
func (b *Budget) renewLocked(ctx context.Context) error {
	leases := b.cfg.Client.Leases(b.cfg.Namespace)
	l := b.held.DeepCopy()
	now := metav1.NewMicroTime(time.Now())
	l.Spec.RenewTime = &now
	l.Spec.LeaseDurationSeconds = b.seconds()
	updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		cur, gerr := leases.Get(ctx, l.Name, metav1.GetOptions{})
		if gerr != nil && !apierrors.IsNotFound(gerr) {
			return fmt.Errorf("reading Lease %s/%s: %w", b.cfg.Namespace, l.Name, gerr)
		}
		if gerr != nil || holderOf(cur) != b.cfg.Holder {
			holder := "nobody"
			if gerr == nil {
				holder = holderOf(cur)
			}
			b.cfg.Log.Error("Lost disruption slot: it expired and was taken; the next disruptive step waits for a slot",
				zap.String("lease", l.Name), zap.String("holder", holder))
			b.held = nil
			return nil
		}
		cur.Spec.RenewTime = &now
		cur.Spec.LeaseDurationSeconds = b.seconds()
		updated, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("renewing Lease %s/%s: %w", b.cfg.Namespace, l.Name, err)
	}
	b.held, b.renewed = updated, time.Now()
	return nil
}

func (b *Budget) seconds() *int32 {
	s := int32(b.cfg.Duration / time.Second)
	return &s
}
