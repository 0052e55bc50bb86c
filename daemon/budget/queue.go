package budget

import (
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// The queue of waiters. A daemon that finds every slot held (or loses a race
// for a free one) enqueues itself: it creates a Lease of its own, its
// queue entry, labelled as the budget's and RoleLabel=waiter, holder itself
// (so the admission policy's rule for Leases holds), and deletes it once it
// holds a slot or stops waiting. The entries are ordered the same way by
// every daemon: oldest first (creationTimestamp, then the holder's
// acquireTime, then the holder's name).
//
// The head of the queue, its first headSize (slots + 2) entries, follow
// all the budget's Leases with one watch; when k slots are free, only the
// first k live entries try, the i-th for the i-th free slot (decide). Every
// waiter behind the head watches one Lease only: the entry headSize places
// ahead of it (placeOf; a watch with fieldSelector metadata.name). When that
// entry goes (its waiter took a slot, or left) the waiter has come closer:
// it lists the budget's Leases once, at a resourceVersion not older than
// its own last write and the deletion it saw (served from the API server's
// watch cache), and watches its new entry ahead, or all the Leases if it
// is now in the head. So a handoff wakes the head (a constant number of
// waiters) and the one waiter that moves into it; nobody polls; a waiting
// daemon costs one watch. The price is one list of the queue per handoff
// (its size grows with the queue; one request, from one daemon). A node
// that has just queued lists only the newest entries (join.go).
//
// A daemon that dies keeps its entry (no daemon may delete another's
// Lease); an entry therefore has a lease of its own, EntryDuration (15
// minutes by default), renewed three times per duration while its daemon
// waits: 1,000 waiters write 3.3 renewals a second, each seen by the head
// and the one waiter watching that entry. An entry past its renewTime plus
// duration, or seen by the waiter behind it unchanged for that long, is
// dropped from the queue by every daemon until it changes (a restarted
// daemon touches its entry, and keeps its place). Before that, in the head
// it is skipped once its turn has lasted a whole TurnGrace without it
// taking the slot, in the view of each daemon that saw its turn; behind
// the head the waiters may pile up behind it. So a waiter that died
// delays the queue by at most its entry's duration after its last renewal
// (and then every waiter that waited on it lists again, once); an
// administrator removes it at once by deleting the Lease.
//
// A daemon that renews its entry but never takes its turn (stuck, or a
// compromised node's) cannot hold the queue either: its renewals do not
// lengthen its turn, and once skipped it gets a new turn at most once per
// renewal period (turns); the waiter behind the head that watches it
// looks again when the entry right behind it is gone (movedPast, a GET per
// renewal at most once per TurnGrace). It costs the queue one TurnGrace per
// renewal period. More entries of one holder (a node queueing many times
// over, to fill the head with itself) count as its oldest (waitersOf). What no queue rule can stop is a node that takes a slot
// and renews it for ever: that is one slot lost until an administrator
// deletes the Lease (the slot's holder is in every waiter's message).

// RoleLabel marks a Lease of the budget that is a queue entry, not a slot.
const RoleLabel = "nodeconfd.io/disruption-role"

// RoleWaiter is RoleLabel's value on queue entries.
const RoleWaiter = "waiter"

// DefaultTurnGrace is how long a waiter's turn lasts before the others
// skip it: far longer than a live daemon takes to see its turn and write.
const DefaultTurnGrace = 15 * time.Second

// DefaultEntryDuration is a queue entry's lease duration: renewed every 5
// minutes, 1,000 waiters write 3.3 renewals a second.
const DefaultEntryDuration = 15 * time.Minute

// QueueName is the name of holder's queue entry in budget name: fixed
// length whatever the node's name.
func QueueName(name, holder string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(holder))
	return fmt.Sprintf("%s-q-%016x", name, h.Sum64())
}

// waiter is one queue entry as a daemon sees it.
type waiter struct {
	// Name is the entry's Lease.
	Name    string
	Holder  string
	Version string
	// Since orders the queue: when the entry was created (whole seconds,
	// the API server's clock), then when its holder created it (the
	// holder's clock, finer), then by holder.
	Since, Acquired time.Time
	// Expires is when the entry lapses unless renewed, by its renewTime
	// (the holder's clock); zero when it has none.
	Expires time.Time
}

// waitersOf returns the queue entries among the Leases, in queue order:
// oldest first. An entry whose QueuedAtLabel is not a time within skew of
// its creation (labelOK) is not in the queue: the lists that select by the
// label could not all show it, and the daemons' views must agree.
func waitersOf(leases map[string]*coordinationv1.Lease, def, skew time.Duration) []waiter {
	var q []waiter
	for _, l := range leases {
		if l.Labels[RoleLabel] != RoleWaiter || holderOf(l) == "" || !labelOK(l, skew) {
			continue
		}
		w := waiter{Name: l.Name, Holder: holderOf(l), Version: l.ResourceVersion, Since: l.CreationTimestamp.Time}
		if l.Spec.AcquireTime != nil {
			w.Acquired = l.Spec.AcquireTime.Time
		}
		w.Expires = entryExpires(l, def)
		q = append(q, w)
	}
	// Within a second, the holders' clocks order the entries: many nodes
	// queueing at once then mostly find entries created after theirs
	// behind them, not ahead (by name), and keep their place.
	sort.Slice(q, func(i, j int) bool {
		switch {
		case !q[i].Since.Equal(q[j].Since):
			return q[i].Since.Before(q[j].Since)
		case !q[i].Acquired.Equal(q[j].Acquired):
			return q[i].Acquired.Before(q[j].Acquired)
		}
		return q[i].Holder < q[j].Holder
	})
	// One place per node: a daemon's entry has one name (QueueName), and
	// the admission policy lets a node write Leases only as their holder,
	// so more entries of one holder are a node's own doing (a compromised
	// node queueing many times over to fill the head); its oldest counts.
	seen := map[string]bool{}
	out := q[:0]
	for _, w := range q {
		if !seen[w.Holder] {
			seen[w.Holder] = true
			out = append(out, w)
		}
	}
	return out
}

// turns remembers, on this daemon's clock, since when each other waiter's
// turn has lasted, and which waiters it skips as dead.
//
// Only taking the slot ends a turn: renewing the entry does not lengthen
// it, so an entry renewed by a daemon that never takes its turn (stuck, or
// a compromised node's) holds the queue for one grace. A skipped waiter
// whose entry changes since (its daemon came back, and touched it) gets a
// new turn, but not sooner than rearm after it was skipped (the honest
// renewal period): renewing faster holds the queue no longer.
type turns struct {
	self         string
	grace, rearm time.Duration
	// since is when each waiter's turn began (by holder).
	since map[string]time.Time
	// skipped holds the waiters skipped: the version skipped, and when.
	skipped map[string]observation
}

func newTurns(self string, grace, rearm time.Duration) *turns {
	return &turns{self: self, grace: grace, rearm: rearm, since: map[string]time.Time{},
		skipped: map[string]observation{}}
}

// live returns the queue without the waiters skipped, given free slots
// free now, and when the next turn lapses (zero when none runs). A waiter
// whose turn has lasted the grace is skipped, and the turn passes on at
// once. This daemon never skips itself.
func (t *turns) live(queue []waiter, free int, now time.Time) ([]waiter, time.Time) {
	for {
		var out []waiter
		for _, w := range queue {
			if sk, ok := t.skipped[w.Holder]; ok && w.Holder != t.self &&
				(sk.version == w.Version || now.Before(sk.seen.Add(t.rearm))) {
				continue
			}
			delete(t.skipped, w.Holder)
			out = append(out, w)
		}
		next, lapsed := t.clock(out, free, now)
		if !lapsed {
			return out, next
		}
	}
}

// clock starts and ends the turns of the first free waiters of queue; it
// reports whether one lapsed (and was skipped), else when the next lapses.
func (t *turns) clock(queue []waiter, free int, now time.Time) (time.Time, bool) {
	turn := map[string]bool{}
	var next time.Time
	for i, w := range queue {
		if i >= free {
			break
		}
		turn[w.Holder] = true
		if w.Holder == t.self {
			continue
		}
		began, ok := t.since[w.Holder]
		if !ok {
			began = now
			t.since[w.Holder] = began
		}
		end := began.Add(t.grace)
		if !now.Before(end) {
			t.skipped[w.Holder] = observation{version: w.Version, seen: now}
			delete(t.since, w.Holder)
			return time.Time{}, true
		}
		next = earliest(next, end)
	}
	for h := range t.since {
		if !turn[h] {
			delete(t.since, h) // its turn ended: it took a slot, or others came first
		}
	}
	return next, false
}

// decide is choose with the queue: adopt the node's own slot; else, when
// free slots are left after one for each live waiter ahead of it, take
// one; else wait. A node in the queue at position p takes the p-th free
// slot; one not in it takes one of the free slots the queue leaves,
// spread by its name. Ahead says how many live waiters come first.
func decide(holder string, slots []slot, queue []waiter, now time.Time) Choice {
	for _, s := range slots {
		if s.Exists && s.Holder == holder {
			return Choice{Action: Adopt, Slot: s.Index}
		}
	}
	var free []slot
	for _, s := range slots {
		if s.free(now) {
			free = append(free, s)
		}
	}
	pos := len(queue)
	for i, w := range queue {
		if w.Holder == holder {
			pos = i
			break
		}
	}
	pick := -1
	switch {
	case pos < len(queue) && pos < len(free):
		pick = pos
	case pos == len(queue) && len(free) > len(queue):
		left := len(free) - len(queue)
		pick = len(queue) + int(hash(holder)%uint32(left))
	}
	if pick >= 0 {
		s := free[pick]
		if !s.Exists {
			return Choice{Action: Create, Slot: s.Index}
		}
		return Choice{Action: TakeOver, Slot: s.Index}
	}
	c := waitChoice(slots)
	c.Ahead = pos
	return c
}

// waitChoice is the Wait choice: the holders, sorted, and the first expiry.
func waitChoice(slots []slot) Choice {
	c := Choice{Action: Wait}
	for _, s := range slots {
		if s.Holder != "" {
			c.Holders = append(c.Holders, s.Holder)
		}
		if !s.Exists || s.Holder == "" {
			continue
		}
		if end := s.Seen.Add(s.Duration); c.Until.IsZero() || end.Before(c.Until) {
			c.Until = end
		}
	}
	sort.Strings(c.Holders)
	return c
}
