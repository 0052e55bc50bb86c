package phases

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// Waits is what may hold an update before it disrupts the node or, for a
// pause, before its first write (package daemon/waits): an administrator's
// pause annotation, the maintenance windows, pods that block a disruption,
// alerts firing in Prometheus.
// Nil in Env means none of them.
type Waits interface {
	// Paused reports whether the node is paused, from the watch cache (no
	// request), and the hold's text.
	Paused() (Hold, bool)
	// Check says what holds the update now; a zero Hold when nothing does.
	// disruptive is set for an update that drains or reboots the node.
	Check(ctx context.Context, disruptive bool) (Hold, error)
}

// Kinds of Hold, also the reasons of their Events and the metric's label.
const (
	HoldPaused       = "Paused"
	HoldWindow       = "OutsideMaintenanceWindow"
	HoldBlockingPods = "BlockingPods"
	HoldAlerts       = "AlertsFiring"
	// HoldDrainBlocked: a PodDisruptionBudget at zero that no surge can
	// lift would hold the drain; the node waits uncordoned.
	HoldDrainBlocked = "DrainWouldBlock"
)

// Hold is one thing an update waits for.
type Hold struct {
	// Kind is HoldPaused, HoldWindow, HoldBlockingPods, HoldDrainBlocked or HoldAlerts; ""
	// for none.
	Kind string
	// Message says what the update waits for and until when, for the
	// condition and the Events.
	Message string
	// Until, when set, is when the hold ends by itself (a window opens):
	// the gate looks again then at the latest.
	Until time.Time
}

// gateEvery is how often a held update looks again at what holds it (the
// pause annotation and a ConfigMap come from watch caches; the pods are one
// list of the node's pods).
const gateEvery = 3 * time.Second

// disruptive reports whether the update drains or reboots the node.
func disruptive(d Data) bool { return d.Update().Action.NeedsDrain() }

// gate returns once nothing holds the update: while something does, the
// running phase's condition says what (reason Waiting, see Runner.Report),
// an Event marks the start and the end of each hold, and d.Waiting tells
// the metrics which wait holds the update. onHold, when set, runs as each
// hold starts, before it is reported.
func gate(ctx context.Context, d Data, disrupts bool, onHold func(context.Context, Hold) error) error {
	w := d.Ports().Waits
	if w == nil {
		return nil
	}
	var cur Hold
	var since time.Time
	end := func() {
		if cur.Kind == "" {
			return
		}
		d.Waiting("")
		d.Note("WaitEnded", fmt.Sprintf("Update to %s no longer waits (%s for %s)", d.Update().DesiredName,
			cur.Kind, d.Clock().Sub(since).Round(time.Second)))
		LogFrom(ctx, zap.NewNop()).Info("Update no longer waits", zap.String("waitedFor", cur.Kind))
		cur = Hold{}
	}
	for {
		h, err := w.Check(ctx, disrupts)
		if err != nil && ctx.Err() == nil {
			// The API server may be away for a while: the update waits, and
			// says why, rather than fail.
			LogFrom(ctx, zap.NewNop()).Warn("Cannot check what the update waits for; retrying", zap.Error(err))
			_ = d.Report(ctx, "Cannot check what the update waits for (retrying): "+err.Error())
			cur.Message = ""
			if err := Sleep(ctx, gateEvery); err != nil {
				d.Waiting("")
				return err
			}
			continue
		}
		if err != nil {
			d.Waiting("")
			return err
		}
		if h.Kind == "" {
			end()
			return nil
		}
		if h.Kind != cur.Kind {
			end()
			if onHold != nil {
				if err := onHold(ctx, h); err != nil {
					return err
				}
			}
			steer(ctx, d, disrupts && h.Kind != HoldPaused)
			since = d.Clock()
			d.Waiting(h.Kind)
			d.Note(h.Kind, fmt.Sprintf("Update to %s waits: %s", d.Update().DesiredName, h.Message))
			LogFrom(ctx, zap.NewNop()).Info("Update waits", zap.String("for", h.Kind), zap.String("why", h.Message))
		}
		if h.Message != cur.Message {
			_ = d.Report(ctx, h.Message)
		}
		cur = h
		next := gateEvery
		if !h.Until.IsZero() {
			next = min(next, max(h.Until.Sub(d.Clock()), 0)+50*time.Millisecond)
		}
		if err := Sleep(ctx, next); err != nil {
			d.Waiting("") // stopped (shutdown, new config): no WaitEnded Event, the wait did not end
			return err
		}
	}
}

// steer keeps the daemon's PreferNoSchedule taint on the node while a
// disruptive update waits for its turn (a window, blocking pods, the
// drain's forecast, alerts), and off while it is paused (not its turn: an
// administrator's hold) and once the gate ends, whichever way (the cordon
// takes over, a new config, a shutdown: the gate's Release). A taint a
// killed daemon left is taken off at its next start (daemon.clearSteer).
func steer(ctx context.Context, d Data, on bool) {
	u := d.Update()
	if on == u.steered {
		return
	}
	if err := d.Ports().Cluster.Steer(ctx, on); err != nil {
		// Only a preference of the scheduler: the update goes on without it.
		LogFrom(ctx, zap.NewNop()).Warn("Cannot change the node's steering taint", zap.Bool("on", on), zap.Error(err))
		return
	}
	u.steered = on
}

// Holds is the gate of what may hold an update (package daemon/waits: the
// pause, the maintenance windows, pods that block a disruption, the drain's
// forecast, alerts). Before the cordon (cordon), it first gives back a
// cordon the update inherited when something holds it, and says the
// cordon it holds while it waits; before the write of an update that is
// not cordoned (a rebootless one), it holds the pause, and the windows
// when they hold every update.
func Holds(cordon bool) Gate {
	g := Gate{Name: "holds", Release: func(ctx context.Context, d Data) { steer(ctx, d, false) }}
	if !cordon {
		g.Wait = func(ctx context.Context, d Data) error { return gate(ctx, d, disruptive(d), nil) }
		return g
	}
	g.Wait = func(ctx context.Context, d Data) error { return gate(ctx, d, disruptive(d), giveBackBeforeWait(d)) }
	g.Holding = func(d Data) string { return cordonHeld(d.Progress()) }
	return g
}

// WriteGate is the step of an update that is not cordoned (a rebootless
// one), held by the holds gate before its first write. A new desired
// config during the wait replaces the update (nothing is written yet). It
// reports through UpdateExecuted, which says what it waits for (reason
// Waiting) while it does.
func WriteGate() Step {
	return Step{
		Name: progress.StepGate, Show: Show{Quick: true},
		Needed: func(d Data) (bool, string) {
			rec := d.Progress()
			switch {
			case d.Ports().Waits == nil:
				return false, "Nothing may hold the update"
			case ran(rec, progress.StepCordon) || ran(rec, progress.StepDrain) || rec.Write.Started:
				return false, "The update's waits came before its cordon"
			}
			return true, ""
		},
		Cut: &Cut{Undo: giveBackForCut},
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			return Outcome{Message: "Nothing holds the update"}, nil
		},
	}
}

// ran reports whether the step ran (done, not skipped).
func ran(rec *progress.Record, name string) bool {
	st := rec.Step(name)
	return st != nil && !st.Skipped
}
