package lifecycle

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// Each wait before the update cordons or writes says MaintenancePlanned;
// the waits of the drain and before the reboot do not.
func TestPlannedWaits(t *testing.T) {
	for _, tc := range []struct {
		reason  string
		planned bool
	}{
		{phases.HoldPaused, true}, {phases.HoldWindow, true}, {phases.HoldBlockingPods, true},
		{phases.HoldDrainBlocked, true}, {phases.HoldAlerts, true}, {phases.WaitFailedElsewhere, true},
		{phases.WaitUpdateSpread, true},
		{phases.WaitDrainBlocked, false}, {phases.WaitVolumesDetached, false}, {"", false},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			n := &node{}
			New(n, time.Second, zap.NewNop()).Observe(&nop{}).Waiting(tc.reason)
			if got := status(n, corev1.NodeMaintenancePlanned) == corev1.ConditionTrue; got != tc.planned {
				t.Errorf("MaintenancePlanned True = %v, want %v (%q)", got, tc.planned, n.changes)
			}
		})
	}
	// Every wait reason is decided here.
	for _, r := range phases.WaitReasons() {
		if r != phases.WaitDrainBlocked && r != phases.WaitVolumesDetached && !plannedWait(r) {
			t.Errorf("wait %s is neither planned nor the drain's", r)
		}
	}
}

// A wait that goes on costs no request; the cordon that ends it keeps
// MaintenancePlanned True (its reason changes, not its transition time),
// and next hears of everything.
func TestWaitThenCordon(t *testing.T) {
	n := &node{}
	next := &nop{}
	w := New(n, time.Second, zap.NewNop())
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return t0 }
	o := w.Observe(next)
	o.Waiting(phases.HoldWindow)
	gets := n.gets
	for range 5 {
		o.Waiting(phases.HoldWindow)
	}
	if n.gets != gets {
		t.Errorf("the wait said again cost %d reads", n.gets-gets)
	}
	o.Waiting("")
	w.now = func() time.Time { return t0.Add(time.Hour) }
	run(o, progress.StepCordon)
	c := n.conds[0]
	if c.Type != corev1.NodeMaintenancePlanned || c.Status != corev1.ConditionTrue || c.Reason != ReasonUpdatePlanned ||
		!c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("after the cordon: %+v", c)
	}
	if len(next.calls) != 9 || next.calls[0] != "waiting "+phases.HoldWindow {
		t.Errorf("next told %q", next.calls)
	}
}

// fakeCluster is a cluster port whose Uncordon answers err.
type fakeCluster struct {
	phases.Cluster
	err   error
	calls int
}

func (c *fakeCluster) Uncordon(context.Context) error { c.calls++; return c.err }

// This daemon's uncordon clears every condition (a failed drain, a cut,
// the update's end gave its cordon back); a failed one clears nothing.
func TestUncordonClears(t *testing.T) {
	n := &node{}
	w := New(n, time.Second, zap.NewNop())
	o := w.Observe(&nop{})
	run(o, progress.StepCordon)
	o.PhaseStarted(progress.StepDrain)
	inner := &fakeCluster{err: errors.New("connection refused")}
	c := w.Cluster(inner)
	if err := c.Uncordon(context.Background()); err == nil || status(n, corev1.NodeDrainInProgress) != corev1.ConditionTrue {
		t.Fatalf("a failed uncordon: %v, DrainInProgress %s", err, status(n, corev1.NodeDrainInProgress))
	}
	inner.err = nil
	if err := c.Uncordon(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.UpdateFinished(phases.ResultFailed)
	for _, typ := range Types() {
		if got := status(n, typ); got != "" && got != corev1.ConditionFalse {
			t.Errorf("%s after the give-back = %q, want False", typ, got)
		}
	}
	if inner.calls != 2 {
		t.Errorf("inner Uncordon called %d times", inner.calls)
	}
}

// The health gate's rollback, kept, clears the conditions, also of an update that
// cordoned nothing; a failed rollback keeps them.
func TestRollbackClears(t *testing.T) {
	n := &node{}
	w := New(n, time.Second, zap.NewNop())
	o := w.Observe(&nop{})
	run(o, progress.StepWrite, progress.StepPostAction)
	o.PhaseStarted(progress.StepHealth)
	var told []string
	h := w.HealthResult(func(r string) { told = append(told, r) })
	h("failed")
	h("rollback-failed")
	if got := status(n, corev1.NodeMaintenanceInProgress); got != corev1.ConditionTrue {
		t.Fatalf("MaintenanceInProgress after a failed rollback = %q, want True", got)
	}
	h("rolled-back")
	if got := status(n, corev1.NodeMaintenanceInProgress); got != corev1.ConditionFalse {
		t.Errorf("MaintenanceInProgress after the rollback = %q, want False", got)
	}
	if !slices.Equal(told, []string{"failed", "rollback-failed", "rolled-back"}) {
		t.Errorf("next told %q", told)
	}
	if h := New(n, time.Second, zap.NewNop()).HealthResult(nil); h != nil {
		h("rolled-back") // no next: no panic
	}
}

// An update that waited and then did not run (its desired config set back)
// is cleared as the node idles; idling costs a read once after a start,
// then none while nothing is True.
func TestIdleClears(t *testing.T) {
	n := &node{}
	w := New(n, time.Second, zap.NewNop())
	w.Idle()
	if n.gets != 1 {
		t.Fatalf("the first idle pass read the Node %d times, want once", n.gets)
	}
	w.Idle()
	if n.gets != 1 {
		t.Errorf("an idle pass with nothing True read the Node")
	}
	w.Observe(&nop{}).Waiting(phases.HoldPaused)
	w.Idle()
	if got := status(n, corev1.NodeMaintenancePlanned); got != corev1.ConditionFalse {
		t.Errorf("MaintenancePlanned after idling = %q, want False", got)
	}
	gets := n.gets
	w.Idle()
	if n.gets != gets {
		t.Errorf("idling after the clear read the Node again")
	}
}
