package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// node is a fake Node's conditions: patches merge by type, as the API
// server's strategic merge patch does, and each change is recorded.
type node struct {
	conds   []corev1.NodeCondition
	changes []string
	failGet error
	gets    int
}

func (n *node) NodeConditions(context.Context) ([]corev1.NodeCondition, error) {
	n.gets++
	return slices.Clone(n.conds), n.failGet
}

func (n *node) PatchNodeConditions(_ context.Context, conds []corev1.NodeCondition) error {
	for _, c := range conds {
		i := slices.IndexFunc(n.conds, func(h corev1.NodeCondition) bool { return h.Type == c.Type })
		if i < 0 {
			n.conds = append(n.conds, c)
		} else {
			n.conds[i] = c
		}
		n.changes = append(n.changes, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return nil
}

type nop struct{ calls []string }

func (n *nop) PhaseStarted(p string)               { n.calls = append(n.calls, "start "+p) }
func (n *nop) PhaseDone(p string, _ time.Duration) { n.calls = append(n.calls, "done "+p) }
func (n *nop) UpdateFinished(r string)             { n.calls = append(n.calls, "finished "+r) }
func (n *nop) Waiting(r string)                    { n.calls = append(n.calls, "waiting "+r) }

// run tells o the phases of an update in order, each started and done.
func run(o phases.Observer, steps ...string) {
	for _, s := range steps {
		o.PhaseStarted(s)
		o.PhaseDone(s, time.Second)
	}
}

// A reboot update: the four conditions become True in the KEP's order and
// are all False once the node is back in service; the reboot step, which
// starts again after the boot in a new process (a new observer), writes
// nothing new.
func TestRebootUpdateInOrder(t *testing.T) {
	n := &node{conds: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}
	next := &nop{}
	o := New(n, time.Second, zap.NewNop()).Observe(next)
	run(o, progress.StepDetect, progress.StepPrepare, progress.StepCordon, progress.StepDrain, progress.StepGate,
		progress.StepWrite)
	o.PhaseStarted(progress.StepReboot) // the process ends in the reboot
	o = New(n, time.Second, zap.NewNop()).Observe(next)
	run(o, progress.StepReboot, progress.StepValidate, progress.StepUncordon, progress.StepSetCurrent)
	o.UpdateFinished(phases.ResultSucceeded)

	want := []string{
		"MaintenancePlanned=True",
		"DrainInProgress=True",
		"DrainInProgress=False", "Drained=True",
		"MaintenanceInProgress=True", "MaintenancePlanned=False",
		"Drained=False", "MaintenanceInProgress=False",
	}
	if !slices.Equal(n.changes, want) {
		t.Errorf("changes:\n got %q\nwant %q", n.changes, want)
	}
	if n.conds[0].Type != corev1.NodeReady || n.conds[0].Status != corev1.ConditionTrue {
		t.Errorf("the kubelet's Ready condition was changed: %+v", n.conds[0])
	}
	if len(next.calls) == 0 || next.calls[len(next.calls)-1] != "finished succeeded" {
		t.Errorf("next was not told everything: %q", next.calls)
	}
}

// An update that drains nothing (a reload, no post action) is maintenance
// but announces no drain: MaintenanceInProgress alone, and no condition is
// created only to say False.
func TestNoDrainUpdate(t *testing.T) {
	n := &node{}
	o := New(n, time.Second, zap.NewNop()).Observe(&nop{})
	run(o, progress.StepDetect, progress.StepPrepare, progress.StepWrite, progress.StepReloadCRIO, progress.StepSetCurrent)
	o.UpdateFinished(phases.ResultSucceeded)
	want := []string{"MaintenanceInProgress=True", "MaintenanceInProgress=False"}
	if !slices.Equal(n.changes, want) {
		t.Errorf("changes: got %q, want %q", n.changes, want)
	}
}

// A failed update is retried with the node still drained: the conditions
// stay; the give-back of a superseded update clears them.
func TestFailedKeepsGiveBackClears(t *testing.T) {
	n := &node{}
	o := New(n, time.Second, zap.NewNop()).Observe(&nop{})
	run(o, progress.StepCordon, progress.StepDrain)
	o.PhaseStarted(progress.StepWrite)
	o.UpdateFinished(phases.ResultFailed)
	if got := status(n, corev1.NodeMaintenanceInProgress); got != corev1.ConditionTrue {
		t.Fatalf("MaintenanceInProgress after a failure = %q, want True", got)
	}
	o.UpdateFinished(phases.ResultSuperseded)
	run(o, progress.StepGiveBack)
	for _, typ := range Types() {
		if got := status(n, typ); got != corev1.ConditionFalse {
			t.Errorf("%s after the give-back = %q, want False", typ, got)
		}
	}
}

// lastTransitionTime moves only when the status does; an unchanged
// condition is not written again.
func TestTransitionTime(t *testing.T) {
	n := &node{}
	w := New(n, time.Second, zap.NewNop())
	o := w.Observe(&nop{})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return t0 }
	o.PhaseStarted(progress.StepWrite)
	w.now = func() time.Time { return t0.Add(time.Hour) }
	o.PhaseStarted(progress.StepReboot)
	if len(n.changes) != 1 {
		t.Errorf("an unchanged condition was written again: %q", n.changes)
	}
	got := n.conds[0].LastTransitionTime.Time
	if !got.Equal(t0) {
		t.Errorf("lastTransitionTime = %v, want %v", got, t0)
	}
}

// A Node that cannot be read writes nothing and the update goes on.
func TestReadFailureWritesNothing(t *testing.T) {
	n := &node{failGet: errors.New("connection refused")}
	next := &nop{}
	o := New(n, time.Second, zap.NewNop()).Observe(next)
	run(o, progress.StepCordon)
	if len(n.changes) != 0 {
		t.Errorf("written without reading: %q", n.changes)
	}
	if strings.Join(next.calls, ",") != "start cordon,done cordon" {
		t.Errorf("next told %q", next.calls)
	}
}

func status(n *node, typ corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range n.conds {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}
