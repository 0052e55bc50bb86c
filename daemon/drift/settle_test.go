package drift

import (
	"testing"
	"time"
)

// A burst is checked settle after its last event, but never later than
// maxSettle after its first: a steady trickle cannot hold a report off.
func TestSettleWait(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name  string
		since time.Duration // from the burst's first event to this one
		want  time.Duration
	}{
		{"first event", 0, settle},
		{"early in the burst", time.Second, settle},
		{"near the bound", maxSettle - 50*time.Millisecond, 50 * time.Millisecond},
		{"at the bound", maxSettle, 0},
		{"past the bound", maxSettle + time.Second, 0},
	} {
		if got := settleWait(t0, t0.Add(c.since)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
