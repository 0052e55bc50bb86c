package phases

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

func needsDrain(d Data) (bool, string) {
	a := d.Update().Action
	if a.NeedsDrain() {
		return true, ""
	}
	if a.DrainReason != "" {
		return false, "No cordon or drain: " + a.DrainReason
	}
	return false, fmt.Sprintf("Post action %s needs no drain", a.Kind)
}

// Cordon marks the node unschedulable before a disruptive post action and
// remembers whether this daemon did it, so the uncordon never undoes an
// administrator's cordon. It first checks that the drain could start (pods
// without a controller fail the update here, with nothing cordoned). When
// this daemon's cordon may already be on the node (an earlier try was cut
// short before it was undone), the check is left to the drain, whose
// failure undoes the cordon: failing here would leave the node cordoned.
// Who goes next is not the daemon's to decide: a node updates once its
// desiredConfig changes (nodeconfd controller paces that per pool).
func Cordon() Step {
	return Step{
		Name: progress.StepCordon, Show: Show{Condition: status.Cordoned, Starting: "Cordoning node", OnNode: true},
		Needed: func(d Data) (bool, string) {
			// A cordon inherited from a replaced update that had written its
			// files stays until this update's uncordon: the phase reports
			// it, so Cordoned never says False while the node is cordoned.
			if d.Progress().Cordon.ByUs {
				return true, ""
			}
			return needsDrain(d)
		},
		Cut: &Cut{Undo: giveBackForCut},
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			if !d.Update().Action.NeedsDrain() { // the inherited cordon (Needed)
				return Outcome{Message: "Node stays cordoned by an earlier update of this daemon until this update " +
					"completes"}, nil
			}
			// The intent first: a crash right after the cordon, before the
			// outcome is saved, must not lose the cordon (a new desired
			// config starts a new record that inherits Cordon.ByUs, and
			// its uncordon lifts only a cordon carrying this daemon's
			// annotation, so an administrator's cordon is safe either way).
			rec := d.Progress()
			if !rec.Cordon.ByUs {
				rec.Cordon.ByUs, rec.Cordon.Own = true, true
				if err := d.SaveProgress(); err != nil {
					return Outcome{}, err
				}
			}
			cordoned, err := d.Ports().Cluster.Cordon(ctx)
			if err != nil {
				return Outcome{}, err
			}
			// Cordon reports the truth even after a restart (it finds its own
			// cordon by its annotation), so the record follows it. A cordon
			// of an earlier update stays that update's (not Cordon.Own): the
			// node holds what that update wrote until this one completes, so
			// no give-back of this update lifts it.
			rec.Cordon.ByUs = cordoned
			rec.Cordon.Own = rec.Cordon.Own && cordoned
			if err := d.SaveProgress(); err != nil {
				return Outcome{}, err
			}
			if !rec.Cordon.ByUs {
				return Outcome{Message: "Node was already cordoned; it stays cordoned after the update"}, nil
			}
			return Outcome{Message: "Cordoned node " + d.Update().Node}, nil
		},
	}
}

// PodsDrainable is the cordon's last gate: the drain could start (pods
// without a controller fail the update here, with nothing cordoned). When
// this daemon's cordon may already be on the node (an earlier try was cut
// short before it was undone), the check is left to the drain, whose
// failure undoes the cordon: failing here would leave the node cordoned.
func PodsDrainable() Gate {
	return Gate{Name: "pods-drainable", Wait: func(ctx context.Context, d Data) error {
		if d.Progress().Cordon.ByUs {
			return nil
		}
		if err := d.Ports().Cluster.CheckDrain(ctx); err != nil {
			return fmt.Errorf("checking the pods of node %s before the cordon: %w", d.Update().Node, err)
		}
		return nil
	}}
}

// giveBackForCut is the Undo of the cordon, drain and gate steps: the
// update cut short by cause (a new desired config, a pause) goes on from an
// uncordoned node, so that whatever comes next (even a failure) leaves no
// cordon behind unreported. If it needs a drain, it cordons again.
func giveBackForCut(ctx context.Context, d Data, cause error) (Settles, error) {
	why, uncordoned := "new desired config", "Uncordoned: the node's desired config changed before anything was written"
	if pe := (*PausedError)(nil); errors.As(cause, &pe) {
		why, uncordoned = "pause", "Uncordoned: the node was paused before anything was written ("+pe.Message+")"
	}
	_, settles, err := giveBack(ctx, d, uncordoned)
	if err != nil {
		return settles, fmt.Errorf("giving back the cordon of node %s for its %s: %w", d.Update().Node, why, err)
	}
	return settles, nil
}

// cordonHeld says why the node is cordoned before the update's cordon step
// is done, "" when it is not (by this daemon): a cordon of an earlier
// update (the one this one replaced after its write, or one whose record
// was lost) stays until this update's uncordon; one of an earlier try of
// this update (progress.Record's Cordon.Own) until the update waits
// (giveBackBeforeWait) or its cordon step runs. The status says so
// (detect, the cordon's Holding), never Cordoned=False.
func cordonHeld(rec *progress.Record) string {
	switch {
	case !rec.Cordon.ByUs || rec.Done(progress.StepCordon):
		return ""
	case rec.Cordon.Own:
		return "Node is cordoned by an earlier try of this update"
	}
	return "Node stays cordoned by an earlier update of this daemon"
}

// cordonHeldSettles is Cordoned=True with cordonHeld's words, when it has
// some: what an update that begins with the cordon of an earlier one says.
func cordonHeldSettles(rec *progress.Record) Settles {
	held := cordonHeld(rec)
	if held == "" {
		return Settles{}
	}
	return Settles{Conditions: []Condition{condition(status.Cordoned, metav1.ConditionTrue, status.Reason(status.Cordoned), held)}}
}

// giveBackBeforeWait returns the cordon waits' onHold: an update about to
// wait gives back a cordon of this daemon that its cordon step did not
// record (a crash right after the request, an uncordon the API server
// refused), so that it waits uncordoned as every update does. An inherited
// cordon stays (progress.Record's Cordon.Own unset; cordonHeld says so).
func giveBackBeforeWait(d Data) func(context.Context, Hold) error {
	return func(ctx context.Context, h Hold) error {
		rec := d.Progress()
		if !rec.Cordon.ByUs || !rec.Cordon.Own || rec.Done(progress.StepCordon) {
			return nil
		}
		// Cordoned says so at once: the wait reports its hold in it (False,
		// Waiting) right after this.
		if _, _, err := giveBack(ctx, d, "Uncordoned: the update waits ("+h.Kind+")"); err != nil {
			return fmt.Errorf("giving back the cordon of node %s before the update waits: %w", d.Update().Node, err)
		}
		LogFrom(ctx, zap.NewNop()).Info("Uncordoned the node: the update waits, and its cordon step had not "+
			"recorded the cordon", zap.String("for", h.Kind))
		return nil
	}
}

// giveBack undoes an update's cordon before anything is written: the
// cordon step is forgotten (the record first, so a crash at any point
// leaves a record that cordons again), the node uncordoned if this daemon
// cordoned it (Cordoned then says so, with uncordoned). It returns what it
// did, and the status that settles.
func giveBack(ctx context.Context, d Data, uncordoned string) (string, Settles, error) {
	rec := d.Progress()
	wasCordoned := rec.Done(progress.StepCordon)
	rec.Forget(progress.StepCordon)
	if err := d.SaveProgress(); err != nil {
		return "", Settles{}, err
	}
	return liftCordon(ctx, d, rec.Cordon.Own, wasCordoned, rec.Write.Started, uncordoned)
}

// liftCordon lifts this daemon's cordon (see giveBack) when it is the
// update's own (own): one of an earlier update stays until the update
// that holds it completes. cordonDone says the cordon step was done,
// writeStarted that what was written was rolled back. Once it lifted the
// cordon, its Settles say Cordoned=False with uncordoned.
func liftCordon(ctx context.Context, d Data, own, cordonDone, writeStarted bool, uncordoned string) (string, Settles, error) {
	rec := d.Progress()
	outcome := "the node was not cordoned"
	if writeStarted {
		outcome = "the node was not cordoned; what was written was rolled back"
	}
	if cordonDone {
		outcome = "the node stays cordoned (it was cordoned before the update)"
	}
	if rec.Cordon.ByUs && !own {
		outcome = "the node stays cordoned by an earlier update of this daemon"
	}
	if rec.Cordon.ByUs && own {
		if err := d.Ports().Cluster.Uncordon(ctx); err != nil {
			return "", Settles{}, err
		}
		rec.Cordon.ByUs, rec.Cordon.Own = false, false
		if err := d.SaveProgress(); err != nil {
			return "", Settles{}, fmt.Errorf("uncordoned the node, then %w", err)
		}
		outcome = "uncordoned the node, nothing was written"
		if writeStarted {
			outcome = "uncordoned the node, what was written was rolled back"
		}
		return outcome, Settles{Conditions: []Condition{
			condition(status.Cordoned, metav1.ConditionFalse, status.Reason(status.Cordoned), uncordoned)}}, nil
	}
	return outcome, Settles{}, nil
}
