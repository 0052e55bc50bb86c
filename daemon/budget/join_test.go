package budget

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// entriesOf returns queue entries of the given holders, queued a second
// apart in that order, and slots Leases.
func entriesOf(holders ...string) map[string]*coordinationv1.Lease {
	out := map[string]*coordinationv1.Lease{}
	for i, h := range holders {
		h := h
		out[QueueName("b", h)] = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: QueueName("b", h), ResourceVersion: "1",
				CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Second)),
				Labels:            map[string]string{Label: "b", RoleLabel: RoleWaiter}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &h},
		}
	}
	return out
}

func TestBehindHead(t *testing.T) {
	cfg := Config{Name: "b", Slots: 2, Holder: "me", EntryDuration: DefaultEntryDuration}
	many := func(n int) []string {
		var hs []string
		for i := 0; i < n; i++ {
			hs = append(hs, fmt.Sprintf("n%d", i))
		}
		return hs
	}
	tests := []struct {
		name  string
		found map[string]*coordinationv1.Lease
		want  bool
	}{
		{"alone", entriesOf("me"), false},
		{"last of the head (4 for 2 slots)", entriesOf(append(many(3), "me")...), false},
		{"just behind the head", entriesOf(append(many(4), "me")...), true},
		{"far behind", entriesOf(append(many(40), "me")...), true},
		{"own entry missing: at the end", entriesOf(many(4)...), true},
		{"own entry missing, short queue", entriesOf(many(3)...), false},
		{"those queued later do not count", entriesOf(append([]string{"a", "b", "me"}, many(10)...)...), false},
	}
	for _, tt := range tests {
		if got := behindHead(tt.found, cfg, expiries{}, t0.Add(time.Minute)); got != tt.want {
			t.Errorf("%s: behindHead = %v, want %v", tt.name, got, tt.want)
		}
	}
	// Entries that lapsed (by their renewTime) do not put it behind.
	found := entriesOf(append(many(4), "me")...)
	old := metav1.NewMicroTime(t0.Add(-time.Hour))
	found[QueueName("b", "n0")].Spec.RenewTime = &old
	if behindHead(found, cfg, expiries{}, t0.Add(time.Minute)) {
		t.Error("behindHead counted an entry that lapsed")
	}
}

func TestSlotsOf(t *testing.T) {
	items := entriesOf("a", "b")
	items["b-0"] = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "b-0", Labels: map[string]string{Label: "b"}}}
	got := slotsOf(items)
	if len(got) != 1 || got["b-0"] == nil {
		t.Errorf("slotsOf = %v, want the slot b-0 alone", got)
	}
}

func TestQueuedAt(t *testing.T) {
	at := time.UnixMilli(1764631234567)
	if got := queuedAt(at); got != "1764631234567" {
		t.Errorf("queuedAt = %q", got)
	}
}

func TestLabelOK(t *testing.T) {
	created := t0 // whole seconds, as the API server sets it
	ms := func(d time.Duration) string { return queuedAt(created.Add(d)) }
	tests := []struct {
		label string
		set   bool
		want  bool
	}{
		{"", false, true}, // an earlier version's entry
		{ms(0), true, true},
		{ms(999 * time.Millisecond), true, true}, // within the creation's second
		{ms(-DefaultClockSkew), true, true},
		{ms(time.Second + DefaultClockSkew), true, true},
		{ms(-DefaultClockSkew - time.Millisecond), true, false},
		{ms(time.Second + DefaultClockSkew + time.Millisecond), true, false},
		{"soon", true, false},
		{"", true, false},
		{"99999999999999999999", true, false},
	}
	for _, tt := range tests {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{}}}
		if tt.set {
			l.Labels[QueuedAtLabel] = tt.label
		}
		if got := labelOK(l, DefaultClockSkew); got != tt.want {
			t.Errorf("labelOK(%q, set %v) = %v, want %v", tt.label, tt.set, got, tt.want)
		}
	}
}

// An entry labelled far from its creation is in no daemon's queue, whether
// it listed the whole budget or only by the label: their views agree.
func TestWaitersOfLabelOff(t *testing.T) {
	found := entriesOf("a", "b", "c")
	found[QueueName("b", "a")].Labels[QueuedAtLabel] = queuedAt(t0.Add(time.Hour))
	found[QueueName("b", "b")].Labels[QueuedAtLabel] = "garbage"
	got := waitersOf(found, DefaultEntryDuration, DefaultClockSkew)
	if len(got) != 1 || got[0].Holder != "c" {
		t.Errorf("waitersOf = %v, want c alone (a labelled an hour late, b not a time)", got)
	}
}
