package controller

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"
)

// errs sums up absolute errors of predictions: in seconds and as a share
// of the durations predicted.
type errs struct {
	n          int
	abs, share float64
}

func (e *errs) add(predicted, actual time.Time, span time.Duration) {
	d := math.Abs(predicted.Sub(actual).Seconds())
	e.n++
	e.abs += d
	if span > 0 {
		e.share += d / span.Seconds()
	}
}

func (e errs) String() string {
	if e.n == 0 {
		return "none"
	}
	return fmt.Sprintf("%d predictions, mean absolute error %.1f s (%.0f%% of the duration)", e.n, e.abs/float64(e.n), 100*e.share/float64(e.n))
}

// report logs each update's and each rollout's prediction against the
// real finish, and the mean absolute errors: of the nodes' first
// estimates (made once prepare chose the post action) by kind, from the
// defaults and from the node's history; of the pool's estimates, the first
// one and every distinct one.
func (w *etaWatch) report(t *testing.T, rollouts []string) {
	var lines []string
	byKey := map[string]*errs{}
	add := func(key string, p, a time.Time, span time.Duration) {
		if byKey[key] == nil {
			byKey[key] = &errs{}
		}
		byKey[key].add(p, a, span)
	}
	for i, c := range rollouts {
		var start, end time.Time
		for _, u := range w.updates {
			if u.config != c || u.finished.IsZero() {
				continue
			}
			if start.IsZero() || u.started.Before(start) {
				start = u.started
			}
			if u.finished.After(end) {
				end = u.finished
			}
			if u.first.IsZero() {
				lines = append(lines, fmt.Sprintf("rollout %d %s: %s took %s, no estimate seen", i+1, c, u.node, u.finished.Sub(u.started)))
				continue
			}
			src := "defaults"
			if u.basedOn > 0 {
				src = "history"
			}
			lines = append(lines, fmt.Sprintf("rollout %d %s: %s %s update took %s; first estimate %s (seen %s after the start, from %d samples) vs finish %s: off by %s",
				i+1, c, u.node, u.kind, u.finished.Sub(u.started), u.first.Format(time.TimeOnly), u.seenAt.Sub(u.started).Round(100*time.Millisecond),
				u.basedOn, u.finished.Format(time.TimeOnly), u.first.Sub(u.finished)))
			add("node "+u.kind+" from "+src, u.first, u.finished, u.finished.Sub(u.started))
			add("node, all", u.first, u.finished, u.finished.Sub(u.started))
		}
		r := w.pools[c]
		if r == nil || len(r.estimates) == 0 || end.IsZero() {
			continue
		}
		var ests []string
		for _, e := range r.estimates {
			ests = append(ests, e.Format(time.TimeOnly))
			add("pool, every distinct estimate", e, end, end.Sub(start))
		}
		add("pool, first estimate", r.first, end, end.Sub(start))
		lines = append(lines, fmt.Sprintf("rollout %d %s: pool took %s; estimates %s vs finish %s", i+1, c, end.Sub(start).Round(time.Second),
			strings.Join(ests, ", "), end.Format(time.TimeOnly)))
	}
	sort.Strings(lines)
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lines = append(lines, "ETA error, "+k+": "+byKey[k].String())
	}
	t.Logf("predicted vs real finishes:\n%s", strings.Join(lines, "\n"))
}
