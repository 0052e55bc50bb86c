package budget

import (
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// Where a waiter stands in the queue, and what it watches (see queue.go):
// pure decisions, apart from the watches and lists of behind.go.

// headMargin is how many waiters beyond one per slot make up the head of
// the queue, the waiters that watch the whole budget: a handoff while one
// of them is slow to see its turn still finds the next at hand.
const headMargin = 2

// headSize is how many waiters make up the head of the queue.
func headSize(slots int) int { return slots + headMargin }

// place is where a waiter stands, as of one list of the budget's Leases.
type place struct {
	// Ahead counts the live entries before the waiter's (all of them when
	// it has none yet: it joins at the end).
	Ahead int
	// Head: the waiter is one of the first headSize and watches the whole
	// budget; else it watches the entry Watch, headSize places ahead.
	Head  bool
	Watch string
	// Next is the entry right behind Watch: gone while Watch is still
	// there, the queue moved past Watch (see waitBehind).
	Next string
}

// placeOf places self in the queue (in queue order, without the entries
// this daemon saw expire): among the first head waiters, or behind the
// entry head places ahead, which it watches. When that entry goes (took
// a slot, or left), the waiter has come at least one place closer and
// looks again; so each entry is watched by one waiter outside the head,
// and a handoff wakes the head and the one waiter that moves into it.
func placeOf(queue []waiter, self string, head int) place {
	pos := len(queue)
	for i, w := range queue {
		if w.Holder == self {
			pos = i
			break
		}
	}
	if pos < head {
		return place{Ahead: pos, Head: true}
	}
	pl := place{Ahead: pos, Watch: queue[pos-head].Name}
	if head > 1 {
		pl.Next = queue[pos-head+1].Name
	}
	return pl
}

// expiries are the queue entries this daemon saw expire, by name, with the
// version that expired: a waiter behind one that stopped renewing would
// otherwise wait for it for ever (only its own daemon may delete it).
type expiries map[string]string

// note records that the entry name expired at version.
func (e expiries) note(name, version string) { e[name] = version }

// live drops from queue the entries that expired: seen to expire by this
// daemon (its own clock: the version unchanged for a whole duration), or
// past their renewTime plus duration (the holder's clock: so all daemons
// agree on it, a node's clock skew aside). It forgets an expiry once its
// entry changed (renewed: its daemon is back) or is gone. self's own entry
// is never dropped.
func (e expiries) live(queue []waiter, self string, now time.Time) []waiter {
	var out []waiter
	present := map[string]bool{}
	for _, w := range queue {
		present[w.Name] = true
		if v, ok := e[w.Name]; ok && v != w.Version {
			delete(e, w.Name)
		}
		_, seen := e[w.Name]
		lapsed := !w.Expires.IsZero() && !now.Before(w.Expires)
		if (seen || lapsed) && w.Holder != self {
			continue
		}
		out = append(out, w)
	}
	for name := range e {
		if !present[name] {
			delete(e, name)
		}
	}
	return out
}

// watched is what a waiter outside the head knows of the entry it watches:
// its version and since when (on this daemon's clock) it has seen it.
type watched struct {
	name, version string
	seen          time.Time
	duration      time.Duration
	// expires is the entry's renewTime plus duration (zero: none).
	expires time.Time
	// checked is when the waiter last looked whether the queue moved past
	// the entry (movedPast).
	checked time.Time
}

// saw notes a version of the entry seen at now, which expires at expires
// by its renewTime; a new version restarts the entry's lease.
func (w *watched) saw(version string, d time.Duration, expires, now time.Time) {
	if version != w.version {
		w.version, w.seen = version, now
	}
	w.duration, w.expires = d, expires
}

// expiry is when the entry expires unless renewed: a whole lease duration
// after this daemon first saw its version (its own clock, as for slots),
// or at its renewTime plus duration, whichever comes first (as expiries).
func (w watched) expiry() time.Time { return earliest(w.seen.Add(w.duration), w.expires) }

// entryExpires is when the entry l lapses by its renewTime; zero if none.
func entryExpires(l *coordinationv1.Lease, def time.Duration) time.Time {
	if l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Add(entryDurationOf(l, def))
}

// entryDurationOf is the entry's lease duration, at most def (this
// daemon's EntryDuration): every daemon writes its entries with def, so a
// longer one (a node's daemon gone wrong) must not keep a dead entry in
// the queue beyond def.
func entryDurationOf(l *coordinationv1.Lease, def time.Duration) time.Duration {
	return min(durationOf(l, def), def)
}

// entryRenewal is how often a waiter renews its entry: three times per
// entry duration.
func entryRenewal(d time.Duration) time.Duration { return d / 3 }

// laterRV is the later of two resourceVersions ("" is none). They are
// opaque to clients in general; the API server backed by etcd gives
// integers, and one that does not keeps b, the one known last.
func laterRV(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA == nil && errB == nil && x > y {
		return a
	}
	return b
}
