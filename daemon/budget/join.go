package budget

import (
	"context"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Joining a long queue. A node that queues while the whole fleet does (a
// rendered config reaching a pool: the starts spread over minutes, the
// queue hundreds long) needs to know only the entry headSize places ahead
// of it, to watch it. Listing the whole queue for that would make each
// join cost the API server O(queue) Leases, at the rate the nodes join:
// the longest lists at the highest rate, at the end of the spread. So each
// entry carries QueuedAtLabel, when its node queued (its clock, unix
// milliseconds), and a node that has just queued first lists only the
// entries queued in the JoinWindow before it (a label selector with >,
// served from the watch cache). Those are all the queue ahead of it near
// its end: when they put it behind the head, it watches the entry they
// show headSize places ahead, as a full list would have shown it, and its
// waiting message says "at least" that many nodes are ahead. When they do
// not (the queue is short, or the nodes join slowly) it lists the whole
// budget, as ever: the head is only ever decided from a whole view.
//
// The window is the holders' clocks, not the API server's: an entry whose
// node's clock is far behind (or that has no label, from a daemon of an
// earlier version) is missing from the window, so a joiner may watch an
// entry one place further ahead than it should; when that entry goes it
// lists the whole queue and finds it is not in the head yet, and watches
// again. A wrong label costs a list, never a place: the queue's order is
// the entries' creationTimestamp, as before.

// QueuedAtLabel is on each queue entry: when its node queued, in unix
// milliseconds on the node's clock.
const QueuedAtLabel = "nodeconfd.io/queued-at"

// DefaultJoinWindow is how far back a node that just queued looks: at 10
// joins a second, 100 entries rather than the whole queue; below 1.2 a
// second (fewer than a head's worth of 12), it lists the whole queue.
const DefaultJoinWindow = 10 * time.Second

// queuedAt is QueuedAtLabel's value for a node queued at t.
func queuedAt(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// look lists the queue into v, from the version rv on: only the entries
// queued just before the node's own when it has just queued (listRecent)
// and they put it behind the head, else all the budget's Leases.
func (b *Budget) look(ctx context.Context, q *queueEntry, v *view, dead expiries) error {
	rv := laterRV(v.rv, q.version())
	joined, slots := q.joined, v.slots
	q.joined, v.slots = time.Time{}, nil
	if !joined.IsZero() && slots != nil {
		found, lrv, err := b.listRecent(ctx, joined, rv)
		if err != nil {
			return err
		}
		if behindHead(found, b.cfg, dead, time.Now()) {
			for name, l := range slots {
				found[name] = l
			}
			*v = view{found: found, rv: lrv, partial: true}
			return nil
		}
	}
	found, lrv, err := b.listFrom(ctx, rv)
	if err != nil {
		return err
	}
	*v = view{found: found, rv: lrv}
	return nil
}

// behindHead reports whether the queue entries found put the node behind
// the head of the queue (entries missing from them can only be ahead).
func behindHead(found map[string]*coordinationv1.Lease, cfg Config, dead expiries, now time.Time) bool {
	queue := dead.live(waitersOf(found, cfg.EntryDuration), cfg.Holder, now)
	return !placeOf(queue, cfg.Holder, headSize(cfg.Slots)).Head
}

// listRecent lists the queue entries queued since JoinWindow before
// joined, at version rv or later.
func (b *Budget) listRecent(ctx context.Context, joined time.Time, rv string) (map[string]*coordinationv1.Lease, string, error) {
	sel := labels.Set{Label: b.cfg.Name, RoleLabel: RoleWaiter}.String() + "," + QueuedAtLabel + ">" +
		queuedAt(joined.Add(-b.cfg.JoinWindow))
	opts := metav1.ListOptions{LabelSelector: sel}
	if rv != "" {
		opts.ResourceVersion, opts.ResourceVersionMatch = rv, metav1.ResourceVersionMatchNotOlderThan
	}
	return b.listWith(ctx, opts)
}

// slotsOf returns the budget's slots among its Leases (not the queue).
func slotsOf(items map[string]*coordinationv1.Lease) map[string]*coordinationv1.Lease {
	out := map[string]*coordinationv1.Lease{}
	for name, l := range items {
		if _, entry := l.Labels[RoleLabel]; !entry {
			out[name] = l
		}
	}
	return out
}
