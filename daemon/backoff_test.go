package daemon

import (
	"testing"
	"time"
)

// The retry delay doubles up to the cap, each one drawn in [d/2, d), so
// that a fleet failing at once does not retry in step.
func TestNextDelayJittered(t *testing.T) {
	d := &Daemon{Backoff: Backoff{Initial: time.Second, Max: 8 * time.Second}}
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		got := d.nextDelay()
		if got < want/2 || got >= want {
			t.Errorf("delay %s, want in [%s, %s)", got, want/2, want)
		}
	}
	spread := map[time.Duration]bool{}
	for i := 0; i < 50; i++ {
		d := &Daemon{Backoff: Backoff{Initial: time.Minute, Max: time.Hour}}
		spread[d.nextDelay()] = true
	}
	if len(spread) < 40 {
		t.Errorf("50 daemons' first delays took %d values; want them spread", len(spread))
	}
}
