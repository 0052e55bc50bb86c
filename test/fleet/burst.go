package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// burstWindow is the start of a rolling update measured on its own: every
// daemon sees its new desired config at once and prepares, the burst of
// issue 15.
const burstWindow = 10 * time.Second

// burst measures the first burstWindow of something started now.
type burst struct {
	wg      sync.WaitGroup
	w       window
	daemons map[reqKey]int64
	err     error
}

func (f *Fleet) startBurst(ctx context.Context) *burst {
	b := &burst{}
	before, err := f.metrics.snapshot(ctx)
	c0 := f.counter.snapshot()
	if err != nil {
		b.err = err
		return b
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if b.err = sleep(ctx, burstWindow); b.err != nil {
			return
		}
		after, err := f.metrics.snapshot(ctx)
		if err != nil {
			b.err = err
			return
		}
		b.w, b.daemons = between(before, after), diffCounts(c0, f.counter.snapshot())
	}()
	return b
}

// rows adds the burst's figures.
func (b *burst) rows(t *Table, nodes int) {
	b.wg.Wait()
	if b.err != nil {
		t.Add("first "+burstWindow.String()+" of the roll", "not measured: %v", b.err)
		return
	}
	t.Add(fmt.Sprintf("first %s: daemon requests (client side)", burstWindow), "%d, %.1f per node: %s",
		total(b.daemons, true), float64(total(b.daemons, true))/float64(nodes), byVerb(floats(b.daemons)))
	t.Add(fmt.Sprintf("first %s: API server p99 latency", burstWindow), "≤ %s (%.0f requests); slowest: %s",
		seconds(b.w.p99), b.w.count, joinOr(b.w.slowest))
}

func joinOr(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	out := s[0]
	for _, x := range s[1:] {
		out += "; " + x
	}
	return out
}
