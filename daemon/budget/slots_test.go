package budget

import (
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func held(i int, holder string, seen time.Time) slot {
	return slot{Index: i, Exists: true, Holder: holder, Version: "1", Seen: seen, Duration: time.Minute}
}

func TestChoose(t *testing.T) {
	// hash("node-a") % 3 decides where node-a starts looking.
	start := int(hash("node-a") % 3)
	tests := []struct {
		name  string
		slots []slot
		now   time.Time
		want  Choice
	}{
		{"no lease yet", []slot{{Index: 0}}, t0, Choice{Action: Create, Slot: 0}},
		{"held by another, fresh", []slot{held(0, "node-b", t0)}, t0.Add(59 * time.Second),
			Choice{Action: Wait, Holders: []string{"node-b"}, Until: t0.Add(time.Minute)}},
		{"held by another, not renewed for a whole duration", []slot{held(0, "node-b", t0)}, t0.Add(time.Minute),
			Choice{Action: TakeOver, Slot: 0}},
		{"released (no holder)", []slot{{Index: 0, Exists: true, Seen: t0, Duration: time.Minute}}, t0,
			Choice{Action: TakeOver, Slot: 0}},
		{"own slot after a restart, even expired", []slot{held(0, "node-a", t0)}, t0.Add(time.Hour),
			Choice{Action: Adopt, Slot: 0}},
		{"own slot wins over a free one", []slot{{Index: 0}, held(1, "node-a", t0)}, t0,
			Choice{Action: Adopt, Slot: 1}},
		{"all held: holders sorted, first expiry", []slot{held(0, "node-c", t0.Add(time.Second)), held(1, "node-b", t0), held(2, "node-d", t0.Add(2*time.Second))},
			t0.Add(30 * time.Second), Choice{Action: Wait, Holders: []string{"node-b", "node-c", "node-d"}, Until: t0.Add(time.Minute)}},
		{"all free: start at the holder's own offset", []slot{{Index: 0}, {Index: 1}, {Index: 2}}, t0,
			Choice{Action: Create, Slot: start}},
		{"one free among held", []slot{held(0, "node-b", t0), held(1, "node-c", t0), {Index: 2}}, t0,
			Choice{Action: Create, Slot: 2}},
		{"no slots at all", nil, t0, Choice{Action: Wait}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := choose("node-a", tt.slots, tt.now)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("choose = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestChooseSpreadsWaiters(t *testing.T) {
	// With many free slots, different nodes start at different ones.
	slots := make([]slot, 8)
	for i := range slots {
		slots[i] = slot{Index: i}
	}
	seen := map[int]bool{}
	for _, n := range []string{"worker-0", "worker-1", "worker-2", "worker-3", "worker-4", "worker-5"} {
		seen[choose(n, slots, t0).Slot] = true
	}
	if len(seen) < 3 {
		t.Errorf("6 nodes over 8 free slots started at only %d slots", len(seen))
	}
}

func TestExpired(t *testing.T) {
	tests := []struct {
		name string
		s    slot
		now  time.Time
		want bool
	}{
		{"missing", slot{}, t0, false},
		{"no holder", slot{Exists: true, Seen: t0, Duration: time.Second}, t0.Add(time.Hour), false},
		{"just before", held(0, "a", t0), t0.Add(time.Minute - time.Nanosecond), false},
		{"at the end", held(0, "a", t0), t0.Add(time.Minute), true},
		{"clock went back", held(0, "a", t0), t0.Add(-time.Hour), false},
	}
	for _, tt := range tests {
		if got := tt.s.expired(tt.now); got != tt.want {
			t.Errorf("%s: expired = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func lease(name, rv, holder string, seconds int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	if holder != "" {
		l.Spec.HolderIdentity = &holder
	}
	if seconds != 0 {
		l.Spec.LeaseDurationSeconds = &seconds
	}
	return l
}

func TestObservations(t *testing.T) {
	obs := observations{}
	leases := map[string]*coordinationv1.Lease{
		"b-0": lease("b-0", "10", "n1", 60),
		"b-1": lease("b-1", "11", "n2", 0),
		"b-7": lease("b-7", "12", "n3", 60), // outside the budget's N
	}
	got := obs.slots("b", 3, leases, 30*time.Second, t0)
	want := []slot{
		{Index: 0, Exists: true, Holder: "n1", Version: "10", Seen: t0, Duration: time.Minute},
		{Index: 1, Exists: true, Holder: "n2", Version: "11", Seen: t0, Duration: 30 * time.Second},
		{Index: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("first look:\n got %+v\nwant %+v", got, want)
	}
	// Later: b-0 unchanged keeps its first sighting; b-1 renewed (new
	// version) is seen anew; b-0's expiry counts from the first sighting.
	leases["b-1"] = lease("b-1", "13", "n2", 0)
	later := t0.Add(45 * time.Second)
	got = obs.slots("b", 3, leases, 30*time.Second, later)
	if got[0].Seen != t0 || got[1].Seen != later {
		t.Errorf("seen: b-0 %v (want %v), b-1 %v (want %v)", got[0].Seen, t0, got[1].Seen, later)
	}
	if !got[1].expired(later.Add(30*time.Second)) || got[0].expired(later) {
		t.Error("expiry not counted from the last version seen")
	}
	// A deleted Lease is forgotten; recreated with an old version number it
	// is a new sighting.
	delete(leases, "b-0")
	obs.slots("b", 3, leases, 30*time.Second, later)
	if _, ok := obs["b-0"]; ok {
		t.Error("deleted Lease still observed")
	}
}

func TestWaitingMessage(t *testing.T) {
	tests := []struct {
		holders []string
		slots   int
		ahead   int
		atLeast bool
		want    string
	}{
		{[]string{"worker-1"}, 1, 0, false, "Waiting for a disruption slot (1 of 1 in use): held by worker-1"},
		{[]string{"worker-1", "worker-3"}, 2, 0, false, "Waiting for a disruption slot (2 of 2 in use): held by worker-1, worker-3"},
		{[]string{"worker-1"}, 1, 1, false, "Waiting for a disruption slot (1 of 1 in use): held by worker-1; 1 node ahead in the queue"},
		{[]string{"worker-1"}, 1, 12, false, "Waiting for a disruption slot (1 of 1 in use): held by worker-1; 12 nodes ahead in the queue"},
		{[]string{"worker-1"}, 1, 57, true,
			"Waiting for a disruption slot (1 of 1 in use): held by worker-1; at least 57 nodes ahead in the queue"},
		// The slots free for a handoff's moment, which the queue takes.
		{nil, 2, 60, true, "Waiting for a disruption slot (0 of 2 in use, the free ones going to the nodes ahead); " +
			"at least 60 nodes ahead in the queue"},
		{[]string{"worker-1"}, 2, 3, false, "Waiting for a disruption slot (1 of 2 in use, the free ones going to the nodes ahead): " +
			"held by worker-1; 3 nodes ahead in the queue"},
	}
	for _, tt := range tests {
		if got := waitingMessage(tt.holders, tt.slots, tt.ahead, tt.atLeast); got != tt.want {
			t.Errorf("waitingMessage(%v, %d, %d, %v) = %q, want %q", tt.holders, tt.slots, tt.ahead, tt.atLeast, got, tt.want)
		}
	}
}

func TestRenewInterval(t *testing.T) {
	if got := renewInterval(DefaultDuration); got != 6*time.Minute {
		t.Errorf("renew interval of %s = %s", DefaultDuration, got)
	}
}
