package budget

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func named(holders ...string) []waiter {
	q := queued(holders...)
	for i := range q {
		q[i].Name = "q-" + q[i].Holder
	}
	return q
}

func TestPlaceOf(t *testing.T) {
	tests := []struct {
		name  string
		queue []waiter
		head  int
		want  place
	}{
		{"empty queue: head", nil, 3, place{Ahead: 0, Head: true}},
		{"first", named("me", "a", "b", "c"), 3, place{Ahead: 0, Head: true}},
		{"last of the head", named("a", "b", "me", "c"), 3, place{Ahead: 2, Head: true}},
		{"just behind the head watches the first", named("a", "b", "c", "me"), 3, place{Ahead: 3, Watch: "q-a", Next: "q-b"}},
		{"far behind watches head places ahead", named("a", "b", "c", "d", "e", "me", "f"), 3,
			place{Ahead: 5, Watch: "q-c", Next: "q-d"}},
		{"not queued yet, short queue: head", named("a", "b"), 3, place{Ahead: 2, Head: true}},
		{"not queued yet: behind the tail's head", named("a", "b", "c", "d"), 3, place{Ahead: 4, Watch: "q-b", Next: "q-c"}},
		{"a head of one: no entry between", named("a", "me"), 1, place{Ahead: 1, Watch: "q-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := placeOf(tt.queue, "me", tt.head); got != tt.want {
				t.Errorf("placeOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Each entry is watched by at most one waiter outside the head, and every
// waiter outside the head watches an entry ahead of it: a handoff (the
// first entry goes) wakes exactly one of them, whatever the queue's length.
func TestPlaceOfOneWatcherPerEntry(t *testing.T) {
	for _, n := range []int{5, 100, 1000} {
		var holders []string
		for i := 0; i < n; i++ {
			holders = append(holders, fmt.Sprintf("n%04d", i))
		}
		q := named(holders...)
		watchers, heads := map[string]int{}, 0
		for i, h := range holders {
			p := placeOf(q, h, headSize(3))
			if p.Head {
				heads++
				continue
			}
			watchers[p.Watch]++
			if p.Watch != q[i-headSize(3)].Name {
				t.Fatalf("n=%d: %s watches %s", n, h, p.Watch)
			}
		}
		if heads != min(n, headSize(3)) {
			t.Errorf("n=%d: %d in the head, want %d", n, heads, min(n, headSize(3)))
		}
		for e, k := range watchers {
			if k != 1 {
				t.Errorf("n=%d: %s watched by %d waiters", n, e, k)
			}
		}
		if n > headSize(3) && watchers[q[0].Name] != 1 {
			t.Errorf("n=%d: the first entry's going wakes %d waiters behind the head", n, watchers[q[0].Name])
		}
	}
}

func TestExpiries(t *testing.T) {
	e := expiries{}
	q := named("dead", "a", "me")
	e.note("q-dead", "1")
	if got := e.live(q, "me", t0); !reflect.DeepEqual(got, q[1:]) {
		t.Errorf("with q-dead expired: %+v", got)
	}
	// Renewed: its daemon is back, and is in the queue again.
	q[0].Version = "2"
	if got := e.live(q, "me", t0); !reflect.DeepEqual(got, q) || len(e) != 0 {
		t.Errorf("renewed: %+v, expiries %v", got, e)
	}
	// Past its renewTime plus duration: dropped by every daemon, but never
	// by its own.
	q[1].Expires = t0
	if got := e.live(q, "me", t0); len(got) != 2 || got[1].Holder != "me" {
		t.Errorf("a lapsed: %+v", got)
	}
	if got := e.live(q, "a", t0); len(got) != 3 {
		t.Errorf("a dropped its own entry: %+v", got)
	}
	if got := e.live(q, "me", t0.Add(-time.Second)); len(got) != 3 {
		t.Errorf("a dropped before it lapsed: %+v", got)
	}
	q[1].Expires = time.Time{}
	// Gone: forgotten.
	e.note("q-gone", "7")
	e.live(q, "me", t0)
	if len(e) != 0 {
		t.Errorf("expiry of an entry gone kept: %v", e)
	}
}

func TestWatched(t *testing.T) {
	w := watched{name: "q-a"}
	w.saw("1", time.Minute, time.Time{}, t0)
	if !w.expiry().Equal(t0.Add(time.Minute)) {
		t.Fatalf("expiry %v", w.expiry())
	}
	// The same version seen again (a relist): the clock runs on.
	w.saw("1", time.Minute, time.Time{}, t0.Add(30*time.Second))
	if !w.expiry().Equal(t0.Add(time.Minute)) {
		t.Errorf("same version restarted the clock: %v", w.expiry())
	}
	// A renewal: a new version restarts it.
	w.saw("2", time.Minute, time.Time{}, t0.Add(40*time.Second))
	if !w.expiry().Equal(t0.Add(100 * time.Second)) {
		t.Errorf("renewal: expiry %v", w.expiry())
	}
	// Its renewTime says it lapses sooner: that counts.
	w.saw("2", time.Minute, t0.Add(50*time.Second), t0.Add(45*time.Second))
	if !w.expiry().Equal(t0.Add(50 * time.Second)) {
		t.Errorf("by renewTime: expiry %v", w.expiry())
	}
}

func TestLaterRV(t *testing.T) {
	for _, tt := range []struct{ a, b, want string }{
		{"", "", ""}, {"5", "", "5"}, {"", "5", "5"}, {"10", "9", "10"}, {"9", "10", "10"}, {"x", "y", "y"},
	} {
		if got := laterRV(tt.a, tt.b); got != tt.want {
			t.Errorf("laterRV(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestEntryRenewal(t *testing.T) {
	if got := entryRenewal(DefaultEntryDuration); got != 5*time.Minute {
		t.Errorf("entryRenewal = %s", got)
	}
}

// An entry claiming a longer lease than the daemons write lapses at the
// daemon's own EntryDuration after its renewal: a node's daemon gone wrong
// cannot keep a dead entry in the queue for years.
func TestEntryExpiresCapped(t *testing.T) {
	renewed := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	lease := func(seconds *int32) *coordinationv1.Lease {
		rt := metav1.NewMicroTime(renewed)
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &rt, LeaseDurationSeconds: seconds}}
	}
	long, short := int32(1<<31-1), int32(60)
	for _, tt := range []struct {
		name    string
		seconds *int32
		want    time.Duration
	}{
		{"no duration: the default", nil, 15 * time.Minute},
		{"shorter: its own", &short, time.Minute},
		{"longer: capped", &long, 15 * time.Minute},
	} {
		if got := entryExpires(lease(tt.seconds), 15*time.Minute); !got.Equal(renewed.Add(tt.want)) {
			t.Errorf("%s: expires %s, want %s", tt.name, got, renewed.Add(tt.want))
		}
	}
}
