package fleet

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/nodeconfd/nodeconfd/daemon"
)

// roll is what the controller-paced rolling update measured.
type roll struct {
	target                string
	took, render, tracked time.Duration
	times                 map[string]time.Duration
	starts                []time.Duration
	ctl0, ctl1            ctlStats
	peakErr               error
	mostUnavailable       int32
	// over is the pool's conditions when more than maxUnavailable nodes
	// were unavailable ("" if never seen).
	over string
	b    *burst
	tl   *timeline
}

// Rolling changes the pool's fragment and lets the controller roll the
// new rendered config out, at most maxUnavailable nodes at a time. The
// pool is paused (since Single) while the controller renders, and resumed
// once the new config is the pool's: node 0 runs Single's config by then,
// and an unpaused pool would first hand it the old one back. The time runs
// from the fragment's change to the pool's status Updated at the new
// config with every node; the bound is ⌈N/S⌉ × one node's update.
func (f *Fleet) Rolling(ctx context.Context, p *pool, base string, maxUnavailable int, fig *Figures) (*Table, error) {
	var r roll
	var profiled <-chan struct{}
	w, daemons, err := f.measured(ctx, func() error {
		if f.opts.APIServerProfile != "" {
			profiled = f.profileAPIServer(ctx, 30*time.Second, f.opts.APIServerProfile) // apiprofile.go
		}
		var err error
		r, err = f.paced(ctx, p, base, maxUnavailable)
		return err
	})
	if profiled != nil {
		<-profiled
	}
	if err != nil {
		return nil, err
	}
	n := float64(len(f.nodes))
	rounds := math.Ceil(n / float64(maxUnavailable))
	bound := time.Duration(rounds * fig.SingleUpdateSeconds * float64(time.Second))
	fig.RollSeconds, fig.RollBound = r.took.Seconds(), bound.Seconds()
	fig.RequestsPerNode = float64(total(daemons, true)) / n
	fig.StatusWritesPerNode = w.of("PATCH", "machineconfignodes/status") / n
	fig.P99 = w.p99
	fig.RequestsPerHandoff = (w.nonWatch() + w.verb("WATCH")) / n
	fig.ControllerCPUSeconds = (r.ctl1.cpu - r.ctl0.cpu).Seconds()
	fig.ControllerPeakRSS = float64(r.ctl1.hwm)
	t := &Table{Title: fmt.Sprintf("Rolling update of %d nodes by the controller, maxUnavailable %d", len(f.nodes), maxUnavailable)}
	t.Add("total time (fragment changed to the pool's status Updated)", "%s, against ⌈N/S⌉ × one node's update = %.0f × %s = %s: "+
		"**%.2f**", r.took.Round(time.Second), rounds, time.Duration(fig.SingleUpdateSeconds*float64(time.Second)).Round(10*time.Millisecond),
		bound.Round(time.Second), r.took.Seconds()/bound.Seconds())
	t.Add("per round of S nodes", "%s", time.Duration(float64(r.took)/rounds).Round(10*time.Millisecond))
	t.Add("rendered (the pool's new configuration) after; every MCN Updated after", "%s; %s", r.render.Round(10*time.Millisecond),
		r.tracked.Round(100*time.Millisecond))
	t.Add("handoffs of the new config (the controller's log); most unavailable in the pool's status (1-s samples)",
		"%d for %d nodes; %d", p.handoffs(r.target), len(f.nodes), r.mostUnavailable)
	if r.over != "" {
		t.Add("the pool's conditions when more than maxUnavailable were unavailable", "%s", r.over)
	}
	f.rollRows(t, r)
	t.Add("daemon requests", "%d, %.1f per node: %s", total(daemons, true), fig.RequestsPerNode, byVerb(floats(daemons)))
	t.Add("MCN status writes per node per update", "%.2f", fig.StatusWritesPerNode)
	t.Add("API server requests (all clients), per handoff", "%.0f, **%.1f**: %s", w.nonWatch()+w.verb("WATCH"),
		fig.RequestsPerHandoff, byVerb(w.requests))
	others := othersThan(w.requests, daemons)
	t.Add("beside the daemons' (the controller; the benchmark's pool reads and tracker), per handoff", "%.1f: %s",
		sum(others)/n, byVerb(others))
	peak := fmt.Sprintf("%d MiB", r.ctl1.hwm>>20)
	if r.peakErr != nil {
		peak = fmt.Sprintf("%d MiB (since its start: %v)", r.ctl1.hwm>>20, r.peakErr)
	}
	t.Add("controller process in the roll: CPU; peak RSS; RSS at end", "**%.1f s** (%.2f cores, %.1f ms per handoff); **%s**; %d MiB",
		fig.ControllerCPUSeconds, fig.ControllerCPUSeconds/r.took.Seconds(), fig.ControllerCPUSeconds*1000/n, peak, r.ctl1.rss>>20)
	t.Add("API server peak RSS", "%d MiB", f.metrics.resetPeak()>>20)
	apiServerRows(t, w)
	kindRows(t, w, len(f.nodes), "update", n, 1) // self.go; N updates
	r.b.rows(t, len(f.nodes))
	r.tl.rows(t, percentile(r.starts, 1))
	selfRow(t, w, len(f.nodes))
	return t, nil
}

// paced runs the roll: the fragment changed, the render awaited, the pool
// resumed, every node and then the pool's status awaited.
func (f *Fleet) paced(ctx context.Context, p *pool, base string, maxUnavailable int) (roll, error) {
	var r roll
	r.peakErr = p.resetPeak()
	r.ctl0 = p.stats()
	start := time.Now()
	r.b = f.startBurst(ctx)     // burst.go
	r.tl = f.startTimeline(ctx) // timeline.go
	defer f.stopTimeline(ctx, r.tl)
	if err := p.setFragment(ctx, "v1"); err != nil {
		return r, err
	}
	var err error
	if r.target, err = p.rendered(ctx, base); err != nil {
		return r, err
	}
	r.render = time.Since(start)
	wait := f.track.expect(f.Names(), r.target)
	if err := p.setPaused(ctx, false); err != nil {
		return r, err
	}
	type result struct {
		most int32
		over string
		err  error
	}
	poolDone := make(chan result, 1)
	go func() {
		most, over, err := p.updated(ctx, r.target, len(f.nodes), maxUnavailable)
		poolDone <- result{most, over, err}
	}()
	done, err := wait(ctx)
	if err != nil {
		return r, err
	}
	r.tracked = time.Since(start)
	res := <-poolDone
	if res.err != nil {
		return r, res.err
	}
	r.took, r.mostUnavailable, r.over = time.Since(start), res.most, res.over
	if r.over != "" {
		r.over += "; the named nodes as a watch saw them (since the fleet started):" + f.hist.describe(r.over) +
			"\n    the controller's handoffs to them:" + p.handoffsTo(r.over)
	}
	r.ctl1 = p.stats()
	r.times = map[string]time.Duration{}
	for n, at := range done {
		r.times[n] = at.Sub(start)
	}
	for _, n := range f.nodes {
		if at := n.startedAt(); at.After(start) {
			r.starts = append(r.starts, at.Sub(start))
		}
	}
	return r, nil
}

// rollRows adds when the nodes started and finished, and how long each was
// disrupted.
func (f *Fleet) rollRows(t *Table, r roll) {
	var ds []time.Duration
	for _, d := range r.times {
		ds = append(ds, d)
	}
	t.Add("node finished after (median, p90, last)", "%s, %s, %s", percentile(ds, 0.5).Round(time.Second),
		percentile(ds, 0.9).Round(time.Second), percentile(ds, 1).Round(time.Second))
	t.Add("node started its update after (median, p90, last)", "%s, %s, %s",
		percentile(r.starts, 0.5).Round(100*time.Millisecond), percentile(r.starts, 0.9).Round(100*time.Millisecond),
		percentile(r.starts, 1).Round(100*time.Millisecond))
	// The daemons count the controller's node too.
	t.Add("the daemons' --update-spread: per node, its window", "%s, %s", f.opts.UpdateSpread,
		daemon.SpreadWindow(len(f.nodes)+1, f.opts.UpdateSpread).Round(100*time.Millisecond))
	holds := f.track.holds(f.Names())
	t.Add("each node disrupted (cordoned to Updated: median, p90)", "%s, %s", percentile(holds, 0.5).Round(10*time.Millisecond),
		percentile(holds, 0.9).Round(10*time.Millisecond))
}

// othersThan is the API server's requests less the daemons' own (their
// client-side counts, whose CREATE and UPDATE the API server counts as POST
// and PUT; client-go's retries make them a little higher, so a kind never
// goes below zero).
func othersThan(all map[reqKey]float64, daemons map[reqKey]int64) map[reqKey]float64 {
	server := map[string]string{"CREATE": "POST", "UPDATE": "PUT"}
	mine := map[reqKey]float64{}
	for k, v := range daemons {
		if s, ok := server[k.Verb]; ok {
			k.Verb = s
		}
		mine[k] += float64(v)
	}
	out := map[reqKey]float64{}
	for k, v := range all {
		if d := v - mine[k]; d >= 0.5 {
			out[k] = d
		}
	}
	return out
}

func sum(m map[reqKey]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}
