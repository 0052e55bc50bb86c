package budget

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func queued(holders ...string) []waiter {
	var q []waiter
	for i, h := range holders {
		q = append(q, waiter{Holder: h, Version: "1", Since: t0.Add(time.Duration(i) * time.Second)})
	}
	return q
}

func TestDecide(t *testing.T) {
	free := func(i int) slot { return slot{Index: i} }
	released := func(i int) slot { return slot{Index: i, Exists: true, Seen: t0, Duration: time.Minute} }
	tests := []struct {
		name  string
		slots []slot
		queue []waiter
		want  Choice
	}{
		{"own slot first", []slot{free(0), held(1, "me", t0)}, queued("x", "me"), Choice{Action: Adopt, Slot: 1}},
		{"head of the queue takes the free slot", []slot{held(0, "a", t0), free(1)}, queued("me", "x"),
			Choice{Action: Create, Slot: 1}},
		{"second in line waits for the second free slot", []slot{free(0), held(1, "a", t0)}, queued("x", "me"),
			Choice{Action: Wait, Holders: []string{"a"}, Until: t0.Add(time.Minute), Ahead: 1}},
		{"second in line takes the second free slot", []slot{free(0), released(1)}, queued("x", "me"),
			Choice{Action: TakeOver, Slot: 1}},
		{"newcomer leaves the free slot to the queue", []slot{held(0, "a", t0), free(1)}, queued("x"),
			Choice{Action: Wait, Holders: []string{"a"}, Until: t0.Add(time.Minute), Ahead: 1}},
		{"newcomer takes a slot the queue leaves", []slot{free(0), free(1)}, queued("x"),
			Choice{Action: Create, Slot: 1}},
		{"no queue, one free slot", []slot{held(0, "a", t0), free(1)}, nil, Choice{Action: Create, Slot: 1}},
		{"all held, queued third", []slot{held(0, "a", t0), held(1, "b", t0.Add(time.Second))}, queued("x", "y", "me"),
			Choice{Action: Wait, Holders: []string{"a", "b"}, Until: t0.Add(time.Minute), Ahead: 2}},
		{"expired holder is a free slot", []slot{held(0, "a", t0.Add(-time.Hour))}, queued("me"),
			Choice{Action: TakeOver, Slot: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide("me", tt.slots, tt.queue, t0); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// One handoff wakes one waiter: of many waiters, exactly the first in the
// queue tries for a freed slot, whatever their number.
func TestDecideOneTriesPerFreeSlot(t *testing.T) {
	for _, n := range []int{10, 1000} {
		var names []string
		for i := 0; i < n; i++ {
			names = append(names, "node-"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)))
		}
		q := queued(names...)
		for _, free := range []int{1, 3} {
			slots := []slot{held(0, "h", t0)}
			for i := 1; i <= free; i++ {
				slots = append(slots, slot{Index: i})
			}
			tries := 0
			taken := map[int]bool{}
			for _, w := range q {
				if c := decide(w.Holder, slots, q, t0); c.Action != Wait {
					tries++
					if taken[c.Slot] {
						t.Errorf("n=%d: slot %d tried twice", n, c.Slot)
					}
					taken[c.Slot] = true
				}
			}
			if tries != free {
				t.Errorf("n=%d, %d free: %d waiters try, want %d", n, free, tries, free)
			}
		}
	}
}

const turnGrace = DefaultTurnGrace

// turnRearm is how soon a skipped waiter may have a new turn in the tests:
// the renewal period of the default entry duration.
var turnRearm = entryRenewal(DefaultEntryDuration)

func TestTurns(t *testing.T) {
	q := queued("dead", "b", "me")
	tr := newTurns("me", turnGrace, turnRearm)
	// One free slot: dead's turn starts.
	live, next := tr.live(q, 1, t0)
	if len(live) != 3 || !next.Equal(t0.Add(turnGrace)) {
		t.Fatalf("at start: live %v, next %v", live, next)
	}
	// Not yet lapsed.
	if live, _ = tr.live(q, 1, t0.Add(turnGrace-time.Second)); len(live) != 3 {
		t.Fatalf("before the grace: %d live", len(live))
	}
	// Lapsed: dead is skipped; b's turn starts now.
	later := t0.Add(turnGrace)
	live, next = tr.live(q, 1, later)
	if len(live) != 2 || live[0].Holder != "b" || !next.Equal(later.Add(turnGrace)) {
		t.Fatalf("after the grace: live %v, next %v", live, next)
	}
	// b's turn lapses too: me is next, and never skips itself.
	live, next = tr.live(q, 1, later.Add(turnGrace))
	if len(live) != 1 || live[0].Holder != "me" || !next.IsZero() {
		t.Fatalf("me alone: live %v, next %v", live, next)
	}
	if live, _ = tr.live(q, 1, later.Add(time.Hour)); len(live) != 1 {
		t.Fatalf("me skipped itself: %v", live)
	}
	// dead's entry changes (its daemon came back): it is live again.
	q[0].Version = "2"
	if live, _ = tr.live(q, 1, later.Add(time.Hour)); len(live) != 2 || live[0].Holder != "dead" {
		t.Fatalf("touched entry not live again: %v", live)
	}
	// No free slot: no turn runs, nobody is skipped however long.
	q[0].Version = "1"
	tr2 := newTurns("me", turnGrace, turnRearm)
	if live, next = tr2.live(q, 0, t0); len(live) != 3 || !next.IsZero() {
		t.Fatalf("no free slot: live %v, next %v", live, next)
	}
	if live, _ = tr2.live(q, 0, t0.Add(time.Hour)); len(live) != 3 {
		t.Fatalf("no free slot, an hour later: %d live", len(live))
	}
}

func TestWaitersOf(t *testing.T) {
	entry := func(name, holder, rv string, at time.Time) *coordinationv1.Lease {
		l := lease(name, rv, holder, 60)
		l.Labels = map[string]string{Label: "b", RoleLabel: RoleWaiter}
		l.CreationTimestamp = metav1.NewTime(at)
		return l
	}
	got := waitersOf(map[string]*coordinationv1.Lease{
		"b-0":  lease("b-0", "1", "h", 60), // a slot
		"q-c":  entry("q-c", "c", "4", t0.Add(time.Second)),
		"q-b":  entry("q-b", "b", "3", t0),
		"q-a":  entry("q-a", "a", "2", t0),
		"q-no": entry("q-no", "", "5", t0),
		// More entries of one holder (a node queueing many times over):
		// its oldest counts.
		"flood-1": entry("flood-1", "a", "6", t0.Add(2*time.Second)),
		"flood-0": entry("flood-0", "a", "7", t0.Add(-time.Second)),
	}, time.Minute, DefaultClockSkew)
	want := []waiter{{Name: "flood-0", Holder: "a", Version: "7", Since: t0.Add(-time.Second)},
		{Name: "q-b", Holder: "b", Version: "3", Since: t0},
		{Name: "q-c", Holder: "c", Version: "4", Since: t0.Add(time.Second)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("waitersOf = %+v, want %+v", got, want)
	}
}

// Within a second of creation, the holder's acquireTime orders entries.
func TestWaitersOfSameSecond(t *testing.T) {
	entry := func(name, holder string, acquired time.Duration) *coordinationv1.Lease {
		l := lease(name, "1", holder, 60)
		l.Labels = map[string]string{Label: "b", RoleLabel: RoleWaiter}
		l.CreationTimestamp = metav1.NewTime(t0)
		at := metav1.NewMicroTime(t0.Add(acquired))
		l.Spec.AcquireTime = &at
		return l
	}
	got := waitersOf(map[string]*coordinationv1.Lease{
		"q-a": entry("q-a", "a", 300*time.Millisecond),
		"q-b": entry("q-b", "b", 100*time.Millisecond),
		"q-c": entry("q-c", "c", 300*time.Millisecond),
	}, time.Minute, DefaultClockSkew)
	var order []string
	for _, w := range got {
		order = append(order, w.Holder)
	}
	if want := []string{"b", "a", "c"}; !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

func TestQueueName(t *testing.T) {
	long := string(make([]byte, 253))
	if a, b := QueueName("nodeconfd-disruption", "worker-0"), QueueName("nodeconfd-disruption", long); len(a) != len(b) || a == b {
		t.Errorf("queue names %q and %q", a, b)
	}
}

func TestReporter(t *testing.T) {
	var got []string
	r := reporter{report: func(m string) { got = append(got, m) }, log: nopLog(), slots: 1}
	wait := func(holder string, ahead int, at time.Duration) {
		r.waiting(Choice{Action: Wait, Holders: []string{holder}, Ahead: ahead}, t0.Add(at), "")
	}
	wait("a", 3, 0)              // the wait starts: reported
	wait("b", 2, 10*time.Second) // a handoff in the middle of the queue: not
	wait("c", 0, 20*time.Second) // next in line: reported
	wait("d", 0, 21*time.Second) // next in line, too soon: held back
	if d := r.due(); !d.Equal(t0.Add(25 * time.Second)) {
		t.Errorf("due %v", d)
	}
	wait("d", 0, 25*time.Second)
	want := []string{
		"Waiting for a disruption slot (1 of 1 in use): held by a; 3 nodes ahead in the queue",
		"Waiting for a disruption slot (1 of 1 in use): held by c",
		"Waiting for a disruption slot (1 of 1 in use): held by d",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reports\n%q\nwant\n%q", got, want)
	}
}

func nopLog() *zap.Logger { return zap.NewNop() }

// A waiter that renews its entry but never takes its turn (stuck, or a
// compromised node's) holds the queue for one grace, then once per rearm,
// however often it renews.
func TestTurnsRenewedButNotTaken(t *testing.T) {
	q := queued("stuck", "b", "me")
	tr := newTurns("me", turnGrace, turnRearm)
	renew := func(at time.Time) {
		v, _ := strconv.Atoi(q[0].Version)
		q[0].Version = strconv.Itoa(v + 1)
		tr.live(q, 1, at)
	}
	tr.live(q, 1, t0)
	for d := time.Second; d < turnGrace; d += time.Second {
		renew(t0.Add(d)) // renewed every second during its turn
	}
	skippedAt := t0.Add(turnGrace)
	if live, _ := tr.live(q, 1, skippedAt); len(live) != 2 || live[0].Holder != "b" {
		t.Fatalf("renewals lengthened the turn: live %v at the grace's end", live)
	}
	for d := time.Second; d < turnRearm; d += 10 * time.Second {
		renew(skippedAt.Add(d))
		if live, _ := tr.live(q, 1, skippedAt.Add(d)); live[0].Holder == "stuck" {
			t.Fatalf("renewed %v after its skip: a new turn before the rearm (%v)", d, turnRearm)
		}
	}
	// Past the rearm, a new version earns a new turn (a daemon that came
	// back), of one grace again.
	back := skippedAt.Add(turnRearm)
	renew(back)
	if live, _ := tr.live(q, 1, back); live[0].Holder != "stuck" {
		t.Fatalf("no new turn after the rearm: live %v", live)
	}
	if live, _ := tr.live(q, 1, back.Add(turnGrace)); live[0].Holder == "stuck" {
		t.Fatalf("the new turn outlasted its grace: live %v", live)
	}
}
