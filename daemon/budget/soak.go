package budget

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SoakAnnotation marks a slot's Lease that its holder keeps for the soak
// time after its node's uncordon; its value is the soak's end (RFC 3339).
const SoakAnnotation = "nodeconfd.io/soak-until"

// Soak ends the node's disruption after its uncordon: with no soak time it
// is Release. With one, the slot stays held for the soak time so that the
// next node starts only after it (kured's lock-release delay): the Lease is
// written once more with renewTime now, leaseDurationSeconds the soak time
// and the SoakAnnotation, and then no longer renewed. It lapses by itself,
// as an expired slot does (waiters judge that on their own clocks, and the
// admission policy's takeover rule holds), so a restart or a crash during
// the soak keeps it held until its end with nothing to remember.
func (b *Budget) Soak(ctx context.Context) error {
	if b.cfg.Soak <= 0 {
		return b.Release(ctx)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopRenewLocked()
	if b.held == nil {
		return nil // no slot (taken over while the node was down): nothing to soak
	}
	l := b.held.DeepCopy()
	now := time.Now()
	until := now.Add(b.cfg.Soak).UTC().Truncate(time.Second)
	rt := metav1.NewMicroTime(until.Add(-b.cfg.Soak))
	secs := int32(b.cfg.Soak / time.Second)
	l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &rt, &secs
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[SoakAnnotation] = until.Format(time.RFC3339)
	if _, err := b.cfg.Client.Leases(b.cfg.Namespace).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		// The slot stays as it was (held, no longer renewed): it lapses
		// after the lease duration, a longer soak than asked.
		return fmt.Errorf("keeping Lease %s/%s for the soak time: %w", b.cfg.Namespace, l.Name, err)
	}
	b.logger(ctx).Info("Holding the disruption slot for the soak time", zap.String("lease", l.Name),
		zap.Time("until", until))
	b.held, b.synced = nil, true
	return nil
}

// soakUntil is the end of the soak of a Lease that its holder keeps after
// its uncordon, zero when it is not soaking (no annotation, the soak is
// over, or the holder renewed it since: a new update of the same node).
func soakUntil(l *coordinationv1.Lease, now time.Time) time.Time {
	v, ok := l.Annotations[SoakAnnotation]
	if !ok || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return time.Time{}
	}
	until, err := time.Parse(time.RFC3339, v)
	if err != nil || !now.Before(until) {
		return time.Time{}
	}
	end := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	if d := end.Sub(until); d > time.Second || d < -time.Second {
		return time.Time{}
	}
	return until
}

// soakNote is what the waiting message adds about slots held for a soak
// time: which node soaks, until when.
func soakNote(found map[string]*coordinationv1.Lease, now time.Time) string {
	var parts []string
	for _, l := range found {
		if until := soakUntil(l, now); !until.IsZero() {
			parts = append(parts, fmt.Sprintf("%s soaks after its update until %s", holderOf(l), until.UTC().Format(time.RFC3339)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return "; " + strings.Join(parts, ", ")
}
