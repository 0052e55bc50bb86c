package phases_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// holding is a Waits that holds every update (a closed window) and calls
// first at its first check.
func holding(first func()) *fakeWaits {
	var once sync.Once
	return &fakeWaits{hold: phases.Hold{Kind: phases.HoldWindow, Message: "Outside the maintenance windows"},
		holds: math.MaxInt, onCheck: func() { once.Do(first) }}
}

// Without a hold, a drain update cordons as soon as it is prepared: the
// daemon waits for no other node (who goes next is the controller's to
// decide, by setting desiredConfig), and nothing is waited for after the
// reboot either.
func TestRunnerDrainUpdateGoesAtOnce(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	if got := strings.Join(cl.calls, ","); got != "cordon,drain" || cl.checks != 1 {
		t.Errorf("cluster calls %s, %d checks: want cordon,drain and 1", got, cl.checks)
	}
	for _, c := range w.last {
		if c.Reason == status.ReasonWaiting {
			t.Errorf("%s waits: %q", c.Type, c.Message)
		}
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	r2 := &phases.Runner{Env: r.Env, Status: stager(w, w.last), Node: "n1", Log: r.Log, Now: r.Now, Phases: phases.All(), Record: rec}
	if err := r2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cl.calls, ","); got != "cordon,drain,uncordon,state b Done" {
		t.Errorf("cluster calls %s after the boot", got)
	}
	if c := status.Find(w.last, status.Updated); c.Status != metav1.ConditionTrue {
		t.Errorf("Updated = %s", c.Status)
	}
}

// oldDrainRecord is a progress record as the daemon of the Lease budget
// (before issue 26) wrote it, stopped in the drain of an update that held a
// disruption slot (the slot was in its Lease, not in the record), with a
// field this version does not know added to show it is ignored.
const oldDrainRecord = `{
  "version": 1, "current": "a", "desired": "b",
  "steps": [
    {"name": "give-back", "skipped": true, "reason": "NotRequired", "message": "No replaced update holds anything"},
    {"name": "adopt", "skipped": true, "reason": "NotRequired", "message": "Node runs config a"},
    {"name": "detect", "reason": "UpdatePrepared", "message": "Node needs update from a to b"},
    {"name": "prepare", "reason": "UpdatePreparedUpdateCompatible", "message": "Post action: Reboot; drain required"},
    {"name": "failed-elsewhere", "skipped": true, "reason": "NotRequired", "message": "No health gate is configured"},
    {"name": "cordon", "reason": "UpdateExecutedCordoned", "message": "Cordoned node n1"}
  ],
  "cordonedByUs": true,
  "disruptionSlot": "nodeconfd-disruption-0",
  "os": {},
  "action": {"reboot": true, "drain": true, "drainReason": "the node reboots"}
}`

// A record written by the daemon of the Lease budget resumes where it
// stopped: the drain, then the write and the reboot, with no slot to wait
// for and no cordon taken again.
func TestRunnerResumesRecordOfLeaseBudget(t *testing.T) {
	rec, err := progress.Unmarshal([]byte(oldDrainRecord))
	if err != nil {
		t.Fatal(err)
	}
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	r.Record = rec
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	if got := strings.Join(cl.calls, ","); got != "drain" {
		t.Errorf("cluster calls %s, want drain only", got)
	}
	if h.files["/etc/motd"] != "x" || !rec.Cordon.ByUs {
		t.Errorf("files %v, cordoned by us %v after the resumed update", h.files, rec.Cordon.ByUs)
	}
}

// A shutdown while the update is held stops the run before the cordon.
func TestRunnerStopsWhileHeld(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	stop, cancel := context.WithCancel(context.Background())
	r.Stop = stopOn(t, stop, nil)
	r.Env.Waits = holding(cancel)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrStopped) {
		t.Fatalf("Run: %v, want ErrStopped", err)
	}
	if len(cl.calls) != 0 {
		t.Errorf("cluster calls %v after a stop while held", cl.calls)
	}
	if rec, _ := progress.Unmarshal(h.state[progress.FileName]); rec.Done("cordon") {
		t.Error("cordon recorded done")
	}
	if c := status.Find(w.last, status.NodeDegraded); c.Status != metav1.ConditionFalse {
		t.Errorf("NodeDegraded = %s after a stop", c.Status)
	}
}

// Pods the drain would refuse (no controller) fail the update before the
// cordon: nothing cordoned, NodeDegraded names the pods.
func TestRunnerUndrainableFailsBeforeCordon(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl := &cluster{checkErr: fmt.Errorf("1 pod without a controller that would recreate them: apps/bare: %w", phases.ErrCannotDrain)}
	units, w := &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	err := r.Run(context.Background())
	var se *phases.StepError
	if !errors.As(err, &se) || se.Phase != "cordon" || !errors.Is(err, phases.ErrCannotDrain) {
		t.Fatalf("Run: %v, want the cordon step failing on the check", err)
	}
	if len(cl.calls) != 0 || cl.checks != 1 {
		t.Errorf("cluster calls %v, %d checks: want none, 1", cl.calls, cl.checks)
	}
	r.Fail(context.Background(), err)
	if c := status.Find(w.last, status.NodeDegraded); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "apps/bare") {
		t.Errorf("NodeDegraded = %s %q", c.Status, c.Message)
	}
}

// When this daemon's cordon may still be on the node (an earlier try that
// could not drain was cut short before it uncordoned), the pre-check does
// not fail the update with the node cordoned: the drain fails instead and
// undoes the cordon.
func TestRunnerUndrainableWithOurCordonUncordons(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	undrainable := fmt.Errorf("1 pod without a controller that would recreate them: apps/bare: %w", phases.ErrCannotDrain)
	cl := &cluster{checkErr: undrainable, drainErr: undrainable}
	units, w := &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	r.Record.Cordon.ByUs, r.Record.Cordon.Own = true, true
	err := r.Run(context.Background())
	if !errors.Is(err, phases.ErrCannotDrain) {
		t.Fatalf("Run: %v, want the drain failing", err)
	}
	if got := strings.Join(cl.calls, ","); got != "cordon,drain,uncordon" {
		t.Errorf("cluster calls %s, want cordon,drain,uncordon", got)
	}
	if r.Record.Cordon.ByUs || r.Record.Done("cordon") {
		t.Errorf("CordonedByUs %v, cordon done %v: want false, false", r.Record.Cordon.ByUs, r.Record.Done("cordon"))
	}
}

// The cordon's intent is saved before the cordon: a crash between the
// cordon and the save of its outcome leaves a record that uncordons.
func TestRunnerSavesCordonIntent(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{cordonErr: errors.New("the daemon died here")}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	saved := false
	cl.onCordon = func() {
		rec, err := progress.Unmarshal(h.state[progress.FileName])
		saved = err == nil && rec.Cordon.ByUs
	}
	if err := r.Run(context.Background()); err == nil {
		t.Fatal("Run succeeded")
	}
	if !saved {
		t.Error("the record on disk did not say Cordon.ByUs when Cordon ran")
	}
}

// A single-node cluster (the Node's controlPlaneTopology is SingleReplica)
// reboots without a cordon or a drain, as upstream's daemon: there is no
// other node for the pods. The conditions say why.
func TestSingleNodeNoDrain(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	r.SingleNode = true
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v, want the reboot", err)
	}
	if len(cl.calls) != 0 {
		t.Errorf("cluster calls %v, want none (no cordon, no drain)", cl.calls)
	}
	for _, cond := range []string{status.Cordoned, status.Drained} {
		if c := status.Find(w.last, cond); c == nil || !strings.Contains(c.Message, plan.SingleNodeNoDrain) {
			t.Errorf("%s: %+v, want it to say %q", cond, c, plan.SingleNodeNoDrain)
		}
	}
	if c := status.Find(w.last, status.UpdateCompatible); c == nil || !strings.Contains(c.Message, "no drain: single-node cluster") {
		t.Errorf("UpdateCompatible: %+v", c)
	}
}

// A single-node update resumed after a crash is still neither cordoned nor
// drained: the plan restored from the record keeps the single node's
// answer, whatever steps the record holds when the daemon dies.
func TestSingleNodeResumedNoDrain(t *testing.T) {
	for _, point := range []string{"done:detect", "done:prepare", "start:write", "done:write", "topology gone"} {
		t.Run(point, func(t *testing.T) {
			single := point != "topology gone" // the Node's annotation lost at the restart
			if !single {
				point = "done:prepare" // the plan saved, the cordon not yet decided
			}
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
			r.SingleNode = true
			killed := errors.New("killed")
			r.Fault = func(p string) {
				if p == point {
					panic(killed)
				}
			}
			func() {
				defer func() {
					if v := recover(); v != killed {
						t.Fatalf("not killed at %s: %v", point, v)
					}
				}()
				_ = r.Run(context.Background())
			}()
			rec, err := progress.Unmarshal(h.state[progress.FileName])
			if err != nil {
				t.Fatal(err)
			}
			r2 := &phases.Runner{Env: r.Env, Status: stager(w, w.last), Node: "n1", Log: zap.NewNop(), Now: time.Now,
				Phases: phases.All(), Record: rec, SingleNode: single}
			if err := r2.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
				t.Fatalf("resumed: %v, want the reboot", err)
			}
			if len(cl.calls) != 0 {
				t.Errorf("cluster calls %v, want none (no cordon, no drain)", cl.calls)
			}
		})
	}
}
