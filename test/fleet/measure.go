package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
)

// Figures are the headline numbers of the measurements, for the
// benchmark's metrics.
type Figures struct {
	StartupSeconds, IdleRequestsPerSecond, Watches float64
	SingleUpdateSeconds, RollSeconds, RollBound    float64
	RequestsPerNode, P99                           float64
	StatusWritesPerNode, RestartRequestsPerNode    float64
	// The controller-paced roll's: API server requests per handoff, the
	// controller's CPU seconds and peak RSS (bytes) in the roll.
	RequestsPerHandoff, ControllerCPUSeconds, ControllerPeakRSS float64
}

// measured runs fn between two snapshots of the API server and of the
// daemons' own counts.
func (f *Fleet) measured(ctx context.Context, fn func() error) (window, map[reqKey]int64, error) {
	f.metrics.resetPeak()
	before, err := f.metrics.snapshot(ctx)
	if err != nil {
		return window{}, nil, err
	}
	c0 := f.counter.snapshot()
	if err := fn(); err != nil {
		return window{}, nil, err
	}
	after, err := f.metrics.snapshot(ctx)
	if err != nil {
		return window{}, nil, err
	}
	return between(before, after), diffCounts(c0, f.counter.snapshot()), nil
}

// Startup starts every daemon at once (a DaemonSet rollout, or nodes
// booting together) and waits until each has registered its
// MachineConfigNode Updated at config base.
func (f *Fleet) Startup(ctx context.Context, base string, fig *Figures) (*Table, error) {
	var took time.Duration
	w, daemons, err := f.measured(ctx, func() error {
		wait := f.track.expect(f.Names(), base)
		start := time.Now()
		f.Start(ctx)
		_, err := wait(ctx)
		took = time.Since(start)
		return err
	})
	if err != nil {
		return nil, err
	}
	n := float64(len(f.nodes))
	f.baseWatches = w.watchesStart
	fig.StartupSeconds = took.Seconds()
	t := &Table{Title: fmt.Sprintf("Start-up storm: %d daemons started at once", len(f.nodes))}
	t.Add("time until every node is registered and Updated", "%s", took.Round(100*time.Millisecond))
	t.Add("daemon requests (client side)", "%d, %.1f per node: %s", total(daemons, true), float64(total(daemons, true))/n,
		byVerb(floats(daemons)))
	t.Add("API server requests (all clients)", "%.0f: %s", w.nonWatch()+w.verb("WATCH"), byVerb(w.requests))
	t.Add("API server peak RSS", "%d MiB", f.metrics.resetPeak()>>20)
	apiServerRows(t, w)
	selfRow(t, w, len(f.nodes))
	return t, nil
}

// Idle measures the settled fleet for d.
func (f *Fleet) Idle(ctx context.Context, d time.Duration, fig *Figures) (*Table, error) {
	w, daemons, err := f.measured(ctx, func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	secs := w.took.Seconds()
	nonWatch := float64(total(daemons, false))
	fig.IdleRequestsPerSecond, fig.Watches = nonWatch/secs, w.watchesEnd-f.baseWatches
	t := &Table{Title: fmt.Sprintf("Idle fleet of %d for %s", len(f.nodes), w.took.Round(time.Second))}
	t.Add("daemon requests beyond watches (client side)", "%.0f: %.3f per second", nonWatch, nonWatch/secs)
	t.Add("daemon watch requests (re-watches)", "%d: %.3f per second", countVerb(daemons, "WATCH"),
		float64(countVerb(daemons, "WATCH"))/secs)
	t.Add("API server requests beyond watches (all clients)", "%.0f: %.3f per second: %s", w.nonWatch(), w.nonWatch()/secs,
		byVerb(w.requests))
	t.Add("daemon watches held", "%.0f (%.0f open, %.0f before the daemons started): %.2f per node", fig.Watches,
		w.watchesEnd, f.baseWatches, fig.Watches/float64(len(f.nodes)))
	apiServerRows(t, w)
	selfRow(t, w, len(f.nodes))
	return t, nil
}

func countVerb(c map[reqKey]int64, verb string) int64 {
	var n int64
	for k, v := range c {
		if k.Verb == verb {
			n += v
		}
	}
	return n
}

// Single updates one node alone, the rest of the fleet idle: the time of
// one node's update, the unit of the rolling update's bound.
func (f *Fleet) Single(ctx context.Context, config string, fig *Figures) (*Table, error) {
	var took, spread time.Duration
	name := f.nodes[0].name
	w, daemons, err := f.measured(ctx, func() error {
		begin := time.Now()
		d, err := f.Roll(ctx, []string{name}, config)
		took = d[name]
		if at := f.nodes[0].startedAt(); at.After(begin) {
			// The daemon's --update-spread is not the update's time: the
			// roll's bound counts the update itself.
			spread = at.Sub(begin)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	fig.SingleUpdateSeconds = (took - spread).Seconds()
	t := &Table{Title: "One node's update (reboot of " + f.opts.RebootTime.String() + "), the fleet idle"}
	t.Add("update time (first status write to Updated)", "%s", (took - spread).Round(10*time.Millisecond))
	t.Add("start put off by the daemon's --update-spread", "%s", spread.Round(10*time.Millisecond))
	t.Add("daemon requests", "%d: %s", total(daemons, true), byVerb(floats(daemons)))
	t.Add("MCN status writes", "%.0f", w.of("PATCH", "machineconfignodes/status"))
	return t, nil
}

// Restart restarts kube-apiserver under the settled fleet and counts what
// the daemons send until every daemon watches again, and settle more:
// resumed watches, relists. The API server's latency is reported over the
// whole of its new process's life, and from when it was ready on (what
// the daemons' reconnects cost, without its own start).
func (f *Fleet) Restart(ctx context.Context, settle time.Duration, fig *Figures) (*Table, error) {
	c0 := f.counter.snapshot()
	start := time.Now()
	if err := f.bed.CP.RestartAPIServer(ctx); err != nil {
		return nil, err
	}
	back := time.Since(start)
	ready, err := f.metrics.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	watching, err := f.watchingAgain(ctx, start, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	if err := sleep(ctx, settle); err != nil {
		return nil, err
	}
	after, err := f.metrics.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	// The new process's counters start at zero.
	w := between(snapshot{at: start.Add(back), latency: map[float64]float64{}, latencyBy: map[reqKey]map[float64]float64{}}, after)
	daemons := diffCounts(c0, f.counter.snapshot())
	n := float64(len(f.nodes))
	fig.RestartRequestsPerNode = float64(total(daemons, true)) / n
	t := &Table{Title: fmt.Sprintf("kube-apiserver restart under %d idle daemons", len(f.nodes))}
	t.Add("API server back (ready) after", "%s", back.Round(100*time.Millisecond))
	t.Add("every daemon watching again after (the reconnect window)", "%s (%s)", watching.Round(100*time.Millisecond),
		kube.ReconnectJitterFor(len(f.nodes)))
	t.Add("daemon requests until then and "+settle.String()+" more", "%d, %.2f per node: %s", total(daemons, true),
		fig.RestartRequestsPerNode, byVerb(floats(daemons)))
	t.Add("API server requests since its start (all clients)", "%.0f: %s", w.nonWatch()+w.verb("WATCH"), byVerb(w.requests))
	apiServerRows(t, w)
	r := between(ready, after)
	t.Add("API server p99 once ready (its own start aside)", "≤ %s (%.0f requests); slowest: %s", seconds(r.p99), r.count,
		strings.Join(r.slowest, "; "))
	return t, nil
}

// watchingAgain waits until the daemons' watches are all open again (two
// per daemon: its Node's and its MachineConfigNode's) after the restart
// that began at start closed them, at most bound; it returns how long
// after start that was.
func (f *Fleet) watchingAgain(ctx context.Context, start time.Time, bound time.Duration) (time.Duration, error) {
	for want := int64(2 * len(f.nodes)); f.counter.watchesOpen() < want; {
		if time.Since(start) > bound {
			return 0, fmt.Errorf("after %s, %d of the %d daemons' watches are open again", bound, f.counter.watchesOpen(), want)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// Redeploy stops every daemon and starts them all again at once (a
// DaemonSet rollout of a new version, every node booting together) on a
// fleet that has run: each finds its MachineConfigNode and its node's
// applied config, so it should need nothing but its watches. It waits until
// every daemon has opened its two watches, and settle more.
func (f *Fleet) Redeploy(ctx context.Context, settle time.Duration) (*Table, error) {
	f.Stop()
	n := len(f.nodes)
	var took time.Duration
	w, daemons, err := f.measured(ctx, func() error {
		c0 := f.counter.snapshot()
		start := time.Now()
		f.Start(ctx)
		for countVerb(diffCounts(c0, f.counter.snapshot()), "WATCH") < int64(2*n) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		took = time.Since(start)
		return sleep(ctx, settle)
	})
	if err != nil {
		return nil, err
	}
	t := &Table{Title: fmt.Sprintf("Every daemon restarted at once on a fleet that ran (%d daemons)", n)}
	t.Add("time until every daemon watches", "%s", took.Round(100*time.Millisecond))
	t.Add("daemon requests (client side, until "+settle.String()+" after)", "%d, %.2f per node: %s", total(daemons, true),
		float64(total(daemons, true))/float64(n), byVerb(floats(daemons)))
	t.Add("API server requests (all clients)", "%.0f: %s", w.nonWatch()+w.verb("WATCH"), byVerb(w.requests))
	apiServerRows(t, w)
	return t, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
