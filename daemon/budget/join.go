package budget

import (
	"context"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Lists that do not grow with the queue. A waiter lists the budget's
// Leases twice: when it joins the queue, to find the entry headSize places
// ahead of it to watch, and when that entry goes, mostly as it comes into
// the head. A whole list each time costs the API server O(queue) Leases
// per node: the longest lists at the highest rate at the end of a fleet's
// spread (a rendered config reaching a pool, the queue hundreds long). So
// each entry carries QueuedAtLabel, when its node queued (its clock, unix
// milliseconds), and the lists select by it (label selectors with < and
// >, served from the watch cache):
//
//   - Joining: a node that has just queued lists only the entries queued in
//     the JoinWindow before it. Near the queue's end those are all that
//     come right before it: when they put it behind the head, it watches
//     the entry they show headSize places ahead, as a whole list would have
//     shown it, and its waiting message says "at least" that many nodes are
//     ahead. When they do not (a short queue, or slow joins) it lists the
//     whole budget.
//   - Moving up: a waiter whose watched entry went lists the entries
//     labelled before its own (plus ClockSkew) and, in one more list, the
//     slots with the entries that have no label (an earlier version's):
//     together every entry ahead of it, which is all a head waiter decides
//     from; the entries behind it come in through its watch.
//   - Coming to wait with a slot free: mostly a handoff under way, the
//     queue's head about to take it. The node lists a head's worth of
//     entries (a limit): when they take every free slot it queues at once,
//     as with every slot held; else the queue is short, or the slot is
//     its, and it lists the whole budget (queueUnlessFree).
//
// The labels are the nodes' clocks, and the lists bound them by the API
// server's (the node's own entry's creationTimestamp), so the daemons'
// views agree only on entries labelled within ClockSkew of their creation:
// an entry labelled otherwise is not in the queue (labelOK). A daemon whose
// clock is off relabels its own entry with its creationTimestamp right
// after it creates it (or finds it after a restart), so it keeps its
// place; a compromised node that labels its entry otherwise loses its own.
// The queue's order is still the entries' creationTimestamp. An entry
// missing from a joiner's window (labelled early) makes the joiner watch
// one entry too far ahead, so it lists again sooner: a list, not a place.

// QueuedAtLabel is on each queue entry: when its node queued, in unix
// milliseconds on the node's clock.
const QueuedAtLabel = "nodeconfd.io/queued-at"

// DefaultJoinWindow is how far back a node that just queued looks: at 10
// joins a second, 100 entries rather than the whole queue; below 1.2 a
// second (fewer than a head's worth of 12), it lists the whole queue.
const DefaultJoinWindow = 10 * time.Second

// DefaultClockSkew is how far an entry's label may be from its
// creationTimestamp and still be in the queue (labelOK): the clocks of
// nodes kept by NTP differ from the API server's by far less, and a daemon
// whose clock is further off relabels its entry.
const DefaultClockSkew = 5 * time.Second

// queuedAt is QueuedAtLabel's value for a node queued at t.
func queuedAt(t time.Time) string { return strconv.FormatInt(max(t.UnixMilli(), 0), 10) }

// labelOK reports whether a queue entry's QueuedAtLabel, if it has one, is a
// time within skew of its creationTimestamp (whole seconds: up to a second
// later). Entries without the label (an earlier version's) are fine.
func labelOK(l *coordinationv1.Lease, skew time.Duration) bool {
	v, ok := l.Labels[QueuedAtLabel]
	if !ok {
		return true
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	created := l.CreationTimestamp.UnixMilli()
	return ms >= created-skew.Milliseconds() && ms <= created+time.Second.Milliseconds()+skew.Milliseconds()
}

// queueUnlessFree joins the queue at once when every slot is held (a read
// of the slots alone), or when the free slots are the queue's (queueTakes),
// and returns the slots read: the node then lists the queue once, with its
// own entry in it, and finds its place from that (look). With a slot of its
// own, or one that the queue may leave it, it looks at the queue first.
func (b *Budget) queueUnlessFree(ctx context.Context, q *queueEntry) (map[string]*coordinationv1.Lease, error) {
	found, _, err := b.list(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	slots := observations{}.slots(b.cfg.Name, b.cfg.Slots, found, b.cfg.Duration, now)
	switch c := choose(b.cfg.Holder, slots, now); c.Action {
	case Adopt:
		return nil, nil
	case Wait:
		return found, q.join(ctx)
	}
	taken, err := b.queueTakes(ctx, freeSlots(slots, now), now)
	if err != nil || !taken {
		return nil, err
	}
	return found, q.join(ctx)
}

// queueTakes reports whether the queue holds at least free live entries of
// other nodes, which come before this node and take the free slots: a slot
// is mostly free for the moment of a handoff, the queue's head about to
// take it. It lists at most a head's worth of entries (a limit), not the
// whole queue, which may be thousands long; a shorter queue the node lists
// whole next (look).
func (b *Budget) queueTakes(ctx context.Context, free int, now time.Time) (bool, error) {
	found, _, err := b.listWith(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{Label: b.cfg.Name, RoleLabel: RoleWaiter}.String(),
		Limit:         int64(headSize(b.cfg.Slots)), // more than the slots, so more than free
	})
	if err != nil {
		return false, err
	}
	others := 0
	for _, w := range (expiries{}).live(waitersOf(found, b.cfg.EntryDuration, b.cfg.ClockSkew), b.cfg.Holder, now) {
		if w.Holder != b.cfg.Holder {
			others++
		}
	}
	return others >= free, nil
}

// look lists the queue into v, from the version rv on: only the entries
// queued just before the node's own when it has just queued (listRecent)
// and they put it behind the head; only the slots and the entries ahead
// when it comes near the head (listAhead); else all the budget's Leases.
func (b *Budget) look(ctx context.Context, q *queueEntry, v *view, dead expiries) error {
	rv := laterRV(v.rv, q.version())
	fresh, slots, near := q.fresh, v.slots, v.near
	q.fresh, v.slots, v.near = false, nil, false
	created, ok := q.created()
	if near && ok {
		found, lrv, err := b.listAhead(ctx, created, rv)
		if err != nil {
			return err
		}
		*v = view{found: found, rv: lrv}
		return nil
	}
	if fresh && ok && slots != nil {
		found, lrv, err := b.listRecent(ctx, created, rv)
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
	queue := dead.live(waitersOf(found, cfg.EntryDuration, cfg.ClockSkew), cfg.Holder, now)
	return !placeOf(queue, cfg.Holder, headSize(cfg.Slots)).Head
}

// listRecent lists the queue entries labelled since JoinWindow before
// created (the node's own entry's creationTimestamp), at version rv or
// later.
func (b *Budget) listRecent(ctx context.Context, created time.Time, rv string) (map[string]*coordinationv1.Lease, string, error) {
	sel := labels.Set{Label: b.cfg.Name, RoleLabel: RoleWaiter}.String() + "," + QueuedAtLabel + ">" +
		queuedAt(created.Add(-b.cfg.JoinWindow))
	return b.listWith(ctx, notOlderThan(sel, rv))
}

// listAhead lists the slots, the entries without QueuedAtLabel, and the
// entries labelled before created (the node's own entry's
// creationTimestamp, whole seconds) plus a second and ClockSkew: every
// entry ahead that is in the queue (labelOK). At version rv or later; it
// returns the earlier of the two lists' versions, for the watch to resume
// from (what it sees again it applies again, in order).
func (b *Budget) listAhead(ctx context.Context, created time.Time, rv string) (map[string]*coordinationv1.Lease, string, error) {
	found, rvA, err := b.listWith(ctx, notOlderThan(labels.Set{Label: b.cfg.Name}.String()+",!"+QueuedAtLabel, rv))
	if err != nil {
		return nil, "", err
	}
	// < the latest label labelOK allows, plus a millisecond.
	bound := queuedAt(created.Add(time.Second + b.cfg.ClockSkew + time.Millisecond))
	ahead, rvB, err := b.listWith(ctx, notOlderThan(labels.Set{Label: b.cfg.Name, RoleLabel: RoleWaiter}.String()+","+
		QueuedAtLabel+"<"+bound, rv))
	if err != nil {
		return nil, "", err
	}
	for name, l := range ahead {
		found[name] = l
	}
	if laterRV(rvA, rvB) == rvA {
		return found, rvB, nil
	}
	return found, rvA, nil
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
