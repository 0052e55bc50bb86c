package budget

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// queueEntry is this daemon's entry in the budget's queue of waiters.
type queueEntry struct {
	b *Budget
	// in is set once the entry exists (created, or found from before a
	// restart); touched once it has been touched since. lease is the entry
	// as last seen.
	in, touched bool
	lease       *coordinationv1.Lease
	// wrote is when the entry was last written.
	wrote time.Time
	// foreign is set when the entry's name is another node's (a hash
	// collision): the daemon then waits without an entry.
	foreign bool
	// fresh is set when this daemon created the entry, until it next looks
	// at the queue (look).
	fresh bool
}

// entryTimeout bounds the removal of the entry when the wait ends.
const entryTimeout = 10 * time.Second

func (q *queueEntry) name() string { return QueueName(q.b.cfg.Name, q.b.cfg.Holder) }

// saw notes the node's own entry among the Leases (a daemon restarted
// while waiting finds its place in the queue again).
func (q *queueEntry) saw(items map[string]*coordinationv1.Lease) {
	if l, ok := items[q.name()]; ok && holderOf(l) == q.b.cfg.Holder && l.Labels[RoleLabel] == RoleWaiter && q.lease == nil {
		q.in, q.lease = true, l
	}
}

// entryVisible bounds the wait for the node's own entry write to show in
// its watch.
const entryVisible = 5 * time.Second

// unseen reports until when to wait for the entry as last written to show
// among the Leases watched (zero: it shows, or waiting is over). Watch
// events come in the order of the writes, so once it shows, so does every
// write before it: the entries queued earlier, and the slot taken by the
// daemon that won the last race. Deciding before would act on a view older
// than this node's own last write, and race again.
func (q *queueEntry) unseen(items map[string]*coordinationv1.Lease) time.Time {
	if !q.in || q.lease == nil {
		return time.Time{}
	}
	if l, ok := items[q.name()]; ok && l.ResourceVersion == q.lease.ResourceVersion {
		return time.Time{}
	}
	if until := q.wrote.Add(entryVisible); time.Now().Before(until) {
		return until
	}
	return time.Time{}
}

// join creates the entry unless it exists. An entry found from before a
// restart is touched, so that waiters that skipped it see it alive.
func (q *queueEntry) join(ctx context.Context) error {
	if q.foreign {
		return nil
	}
	if q.in {
		if !q.touched {
			return q.touch(ctx)
		}
		return nil
	}
	now := metav1.NewMicroTime(time.Now())
	holder := q.b.cfg.Holder
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: q.name(), Namespace: q.b.cfg.Namespace,
			Labels: map[string]string{Label: q.b.cfg.Name, RoleLabel: RoleWaiter, QueuedAtLabel: queuedAt(now.Time)}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: q.seconds(),
			AcquireTime: &now, RenewTime: &now},
	}
	leases := q.b.cfg.Client.Leases(q.b.cfg.Namespace)
	created, err := leases.Create(ctx, l, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := leases.Get(ctx, l.Name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("reading Lease %s/%s: %w", q.b.cfg.Namespace, l.Name, gerr)
		}
		if holderOf(cur) != holder {
			q.foreign = true
			q.b.cfg.Log.Warn("Queue entry name taken by another node; waiting without one",
				zap.String("lease", l.Name), zap.String("holder", holderOf(cur)))
			return nil
		}
		q.in, q.lease = true, cur
		return q.touch(ctx)
	}
	if err != nil {
		return fmt.Errorf("creating Lease %s/%s (queue entry): %w", q.b.cfg.Namespace, l.Name, err)
	}
	q.in, q.touched, q.lease, q.wrote, q.fresh = true, true, created, time.Now(), true
	if !labelOK(created, q.b.cfg.ClockSkew) {
		// This node's clock is off: the others would leave the entry out
		// of the queue. touch relabels it with its creationTimestamp.
		q.b.cfg.Log.Warn("The node's clock is off from the API server's; relabelling its queue entry",
			zap.String("lease", created.Name), zap.String("label", created.Labels[QueuedAtLabel]),
			zap.Time("created", created.CreationTimestamp.Time))
		return q.touch(ctx)
	}
	return nil
}

// keep joins the queue, or renews the entry when due.
func (q *queueEntry) keep(ctx context.Context, now time.Time) error {
	if due := q.renewDue(); q.in && !due.IsZero() && !now.Before(due) {
		return q.touch(ctx)
	}
	return q.join(ctx)
}

// rejoin follows a lost race: the node queues up, or, queued already,
// touches its entry in case the others skipped it.
func (q *queueEntry) rejoin(ctx context.Context) error {
	if !q.in {
		return q.join(ctx)
	}
	return q.touch(ctx)
}

// touch writes a new renewTime to the entry (an update: the daemon's RBAC
// has no patch of Leases): a new version, which the waiters that skipped
// it take as alive.
func (q *queueEntry) touch(ctx context.Context) error {
	leases := q.b.cfg.Client.Leases(q.b.cfg.Namespace)
	l := q.lease
	for attempt := 0; ; attempt++ {
		if l == nil || attempt > 0 {
			cur, err := leases.Get(ctx, q.name(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				q.in, q.lease = false, nil
				return q.join(ctx)
			}
			if err != nil {
				return fmt.Errorf("reading Lease %s/%s (queue entry): %w", q.b.cfg.Namespace, q.name(), err)
			}
			l = cur
		}
		l = l.DeepCopy()
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &now, q.seconds()
		if !labelOK(l, q.b.cfg.ClockSkew) {
			l.Labels[QueuedAtLabel] = queuedAt(l.CreationTimestamp.Time)
		}
		updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && attempt == 0 {
			continue
		}
		if apierrors.IsNotFound(err) {
			q.in, q.lease = false, nil
			return q.join(ctx)
		}
		if err != nil {
			return fmt.Errorf("touching Lease %s/%s (queue entry): %w", q.b.cfg.Namespace, q.name(), err)
		}
		q.lease, q.touched, q.wrote = updated, true, time.Now()
		return nil
	}
}

// seconds is the entry's lease duration: the waiter behind it skips it once
// it has not been renewed for that long.
func (q *queueEntry) seconds() *int32 {
	s := int32(q.b.cfg.EntryDuration / time.Second)
	return &s
}

// renewDue is when the entry is next renewed; zero when the node has none.
func (q *queueEntry) renewDue() time.Time {
	if !q.in || q.foreign || q.wrote.IsZero() {
		return time.Time{}
	}
	return q.wrote.Add(entryRenewal(q.b.cfg.EntryDuration))
}

// created is the entry's creationTimestamp, when it has one.
func (q *queueEntry) created() (time.Time, bool) {
	if !q.in || q.lease == nil || q.lease.CreationTimestamp.IsZero() {
		return time.Time{}, false
	}
	return q.lease.CreationTimestamp.Time, true
}

// version is the entry's resourceVersion as last written; "" when none.
func (q *queueEntry) version() string {
	if !q.in || q.lease == nil {
		return ""
	}
	return q.lease.ResourceVersion
}

// leave deletes the entry, also when the wait was cancelled.
func (q *queueEntry) leave(ctx context.Context, log *zap.Logger) {
	if !q.in {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), entryTimeout)
	defer cancel()
	err := q.b.cfg.Client.Leases(q.b.cfg.Namespace).Delete(ctx, q.name(), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Warn("Cannot remove the node's entry from the disruption queue", zap.String("lease", q.name()), zap.Error(err))
		return
	}
	q.in = false
}

// reporter tells the caller that the node waits, and for whom. A message
// per waiter per handoff would cost the API server a status write from
// every waiter at every handoff, so it reports when the wait starts, and
// again (at most every reportEvery) only while the node is next in line.
type reporter struct {
	report  func(string)
	log     *zap.Logger
	slots   int
	last    string
	at      time.Time
	pending bool
	sent    int
}

// note is added to the message (the slots held for a soak, soakNote).
func (r *reporter) waiting(c Choice, now time.Time, note string) {
	msg := waitingMessage(c.Holders, r.slots, c.Ahead, c.AheadAtLeast) + note
	r.pending = false
	if msg == r.last || (r.sent > 0 && c.Ahead > 0) {
		return
	}
	if r.sent > 0 && now.Before(r.at.Add(reportEvery)) {
		r.pending = true
		return
	}
	r.log.Info("Waiting for a disruption slot", zap.Strings("holders", c.Holders), zap.Int("ahead", c.Ahead),
		zap.Bool("aheadAtLeast", c.AheadAtLeast), zap.Time("firstExpiry", c.Until))
	if r.report != nil {
		r.report(msg)
	}
	r.last, r.at = msg, now
	r.sent++
}

// due is when a held-back report is due; zero when none is.
func (r *reporter) due() time.Time {
	if !r.pending {
		return time.Time{}
	}
	return r.at.Add(reportEvery)
}
