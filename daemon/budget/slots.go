package budget

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// SlotName is the name of slot i's Lease in budget name.
func SlotName(name string, i int) string { return fmt.Sprintf("%s-%d", name, i) }

// slot is what a daemon knows of one slot: its Lease, if it exists, and
// since when (on the daemon's own clock) it has seen that version of it.
type slot struct {
	Index  int
	Exists bool
	Holder string
	// Version is the Lease's resourceVersion; every renewal changes it.
	Version string
	// Seen is when this daemon first saw Version.
	Seen time.Time
	// Duration is how long the holder promised to renew within.
	Duration time.Duration
}

// expired reports whether the holder has let the lease lapse: its version
// has not changed for a whole lease duration on this daemon's own clock.
// Judging by the holder's renewTime instead would trust two clocks to agree.
func (s slot) expired(now time.Time) bool {
	return s.Exists && s.Holder != "" && !now.Before(s.Seen.Add(s.Duration))
}

// free reports whether a daemon may take the slot.
func (s slot) free(now time.Time) bool {
	return !s.Exists || s.Holder == "" || s.expired(now)
}

// freeSlots counts the slots free now.
func freeSlots(slots []slot, now time.Time) int {
	n := 0
	for _, s := range slots {
		if s.free(now) {
			n++
		}
	}
	return n
}

// Action is what a daemon does next to hold a slot.
type Action int

// Actions of a choice.
const (
	// Wait: every slot is held by another node.
	Wait Action = iota
	// Adopt: the node holds the slot already (a restarted daemon); renew it.
	Adopt
	// Create: the slot's Lease does not exist; create it.
	Create
	// TakeOver: the slot's Lease is released or expired; update it (with its
	// resourceVersion, so that only one daemon wins).
	TakeOver
)

func (a Action) String() string {
	return [...]string{"Wait", "Adopt", "Create", "TakeOver"}[a]
}

// Choice is the next step of a daemon that wants a slot.
type Choice struct {
	Action Action
	// Slot is the slot to adopt, create or take over.
	Slot int
	// Holders are the nodes holding the slots, sorted, when waiting.
	Holders []string
	// Until is when the first held slot expires if not renewed, when waiting.
	Until time.Time
	// Ahead is how many waiters of the queue come first, when waiting; at
	// least that many when AheadAtLeast (the node listed only the newest
	// part of a long queue, join.go).
	Ahead        int
	AheadAtLeast bool
}

// choose decides what holder does next: adopt its own slot, else try a free
// one (starting from a slot that depends on the holder's name, so that many
// waiters spread over the free slots instead of all racing for the first),
// else wait.
func choose(holder string, slots []slot, now time.Time) Choice {
	for _, s := range slots {
		if s.Exists && s.Holder == holder {
			return Choice{Action: Adopt, Slot: s.Index}
		}
	}
	if n := len(slots); n > 0 {
		start := int(hash(holder) % uint32(n))
		for k := 0; k < n; k++ {
			s := slots[(start+k)%n]
			if !s.free(now) {
				continue
			}
			if !s.Exists {
				return Choice{Action: Create, Slot: s.Index}
			}
			return Choice{Action: TakeOver, Slot: s.Index}
		}
	}
	c := Choice{Action: Wait}
	for _, s := range slots {
		c.Holders = append(c.Holders, s.Holder)
		if end := s.Seen.Add(s.Duration); c.Until.IsZero() || end.Before(c.Until) {
			c.Until = end
		}
	}
	sort.Strings(c.Holders)
	return c
}

func hash(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// waitingMessage is the Cordoned condition's message while the node waits.
// ahead counts the waiters of the queue before it (0: next in line), or
// the least of them (atLeast).
func waitingMessage(holders []string, slots, ahead int, atLeast bool) string {
	msg := fmt.Sprintf("Waiting for a disruption slot (%d of %d in use", len(holders), slots)
	if len(holders) < slots && ahead > 0 {
		// Free for the moment of a handoff: the nodes ahead take them. The
		// message stays while the node waits behind, so it says so.
		msg += ", the free ones going to the nodes ahead"
	}
	msg += ")"
	if len(holders) > 0 {
		msg += ": held by " + strings.Join(holders, ", ")
	}
	count := ""
	if atLeast {
		count = "at least "
	}
	switch {
	case ahead == 1:
		msg += "; " + count + "1 node ahead in the queue"
	case ahead > 1:
		msg += fmt.Sprintf("; %s%d nodes ahead in the queue", count, ahead)
	}
	return msg
}

// observations remembers when this daemon first saw each version of each
// slot's Lease.
type observations map[string]observation

type observation struct {
	version string
	seen    time.Time
}

// slots turns the Leases found (by name) into the budget's slots, noting
// new versions as seen now.
func (o observations) slots(name string, n int, leases map[string]*coordinationv1.Lease,
	defaultDuration time.Duration, now time.Time) []slot {
	out := make([]slot, n)
	for i := range out {
		ln := SlotName(name, i)
		out[i] = slot{Index: i}
		l, ok := leases[ln]
		if !ok {
			delete(o, ln)
			continue
		}
		obs, ok := o[ln]
		if !ok || obs.version != l.ResourceVersion {
			obs = observation{version: l.ResourceVersion, seen: now}
			o[ln] = obs
		}
		out[i] = slot{Index: i, Exists: true, Holder: holderOf(l), Version: l.ResourceVersion,
			Seen: obs.seen, Duration: durationOf(l, defaultDuration)}
	}
	return out
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func durationOf(l *coordinationv1.Lease, def time.Duration) time.Duration {
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds <= 0 {
		return def
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}

// renewInterval is how often a holder renews: five times per lease
// duration, so that a few failed renewals in a row do not lose the slot.
func renewInterval(d time.Duration) time.Duration { return d / 5 }
