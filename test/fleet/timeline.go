package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// timelineStep is how often the roll's timeline takes a snapshot of the
// API server's metrics.
const timelineStep = 30 * time.Second

// timeline is the API server's metrics every timelineStep of something
// started now (the roll): when its latency rose, and whether it came back
// once every node had started its update.
type timeline struct {
	start  time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup
	snaps  []snapshot
	err    error
}

func (f *Fleet) startTimeline(ctx context.Context) *timeline {
	ctx, cancel := context.WithCancel(ctx)
	tl := &timeline{start: time.Now(), cancel: cancel}
	first, err := f.metrics.snapshot(ctx)
	if err != nil {
		tl.err = err
		return tl
	}
	tl.snaps = append(tl.snaps, first)
	tl.wg.Add(1)
	go func() {
		defer tl.wg.Done()
		for sleep(ctx, timelineStep) == nil {
			s, err := f.metrics.snapshot(ctx)
			if err != nil {
				if ctx.Err() == nil {
					tl.err = err
				}
				return
			}
			tl.snaps = append(tl.snaps, s)
		}
	}()
	return tl
}

// stop takes the last snapshot, at the end of the roll.
func (f *Fleet) stopTimeline(ctx context.Context, tl *timeline) {
	tl.cancel()
	tl.wg.Wait()
	if tl.err != nil {
		return
	}
	s, err := f.metrics.snapshot(ctx)
	if err != nil {
		tl.err = err
		return
	}
	tl.snaps = append(tl.snaps, s)
}

// rows adds the p99 of each step, and from the first step that began
// after started (the last node's start) to the end.
func (tl *timeline) rows(t *Table, started time.Duration) {
	if tl.err != nil || len(tl.snaps) < 2 {
		t.Add("API server p99 over the roll", "not measured: %v", tl.err)
		return
	}
	var steps []string
	after := -1
	for i := 1; i < len(tl.snaps); i++ {
		from := tl.snaps[i-1].at.Sub(tl.start)
		w := between(tl.snaps[i-1], tl.snaps[i])
		step := fmt.Sprintf("%s ≤ %s (%.0f)", from.Round(time.Second), seconds(w.p99), w.count)
		if w.p99 >= 1 && len(w.slowest) > 0 {
			step += fmt.Sprintf(" [slowest: %s; Leases listed %.0f]", strings.Join(w.slowest, ", "), w.listReturned["leases"])
		}
		steps = append(steps, step)
		if after < 0 && from >= started {
			after = i - 1
		}
	}
	t.Add(fmt.Sprintf("API server p99 per %s of the roll (from; requests)", timelineStep), "%s", strings.Join(steps, ", "))
	if after < 0 || after == len(tl.snaps)-1 {
		t.Add("API server p99 once every node had started", "not measured: the last start was in the roll's last step")
		return
	}
	w := between(tl.snaps[after], tl.snaps[len(tl.snaps)-1])
	t.Add("API server p99 once every node had started", "from %s on: ≤ %s (%.0f requests); slowest: %s",
		tl.snaps[after].at.Sub(tl.start).Round(time.Second), seconds(w.p99), w.count, joinOr(w.slowest))
}
