package phases_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// slots is a fake disruption budget: the first Acquire finds the slot taken
// and reports so (then calls waiting, from the runner's goroutine) before
// getting it, unless block is set, in which case it waits for ctx.
type slots struct {
	held                      bool
	acquires, releases, keeps int
	waited                    bool
	block                     bool
	waiting                   func()
	// log, when set, receives "acquire", "keep" and "release" in order
	// (shared with a cluster fake's calls, to check the order of both).
	log *[]string
}

func (s *slots) note(what string) {
	if s.log != nil {
		*s.log = append(*s.log, what)
	}
}

func (s *slots) Keep(context.Context) (bool, error) {
	s.keeps++
	s.note("keep")
	s.held = true
	return true, nil
}

func (s *slots) Acquire(ctx context.Context, report func(string)) error {
	s.acquires++
	s.note("acquire")
	if s.held {
		return nil
	}
	if !s.waited {
		s.waited = true
		report("Waiting for a disruption slot (1 of 1 in use): held by n2")
		if s.waiting != nil {
			s.waiting()
		}
		if s.block {
			<-ctx.Done()
			return ctx.Err()
		}
	}
	s.held = true
	return nil
}

func (s *slots) Release(context.Context) error {
	s.releases++
	s.note("release")
	s.held = false
	return nil
}

// A drain update waits for a slot with UpdateExecuted and Cordoned False,
// the Cordoned message naming the holder, and cordons only once it holds
// one; every disruptive step checks the slot; after the reboot the node
// finishes without a slot and gives it back at the uncordon.
func TestRunnerWaitsForDisruptionSlot(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	b := &slots{}
	r.Env.Disruption = b
	b.waiting = func() {
		if len(cl.calls) != 0 {
			t.Errorf("cluster calls while waiting: %v", cl.calls)
		}
		if c := status.Find(w.last, status.UpdateExecuted); c.Status != metav1.ConditionFalse {
			t.Errorf("UpdateExecuted %s while waiting, want False", c.Status)
		}
		c := status.Find(w.last, status.Cordoned)
		if c.Status != metav1.ConditionFalse || c.Reason != status.ReasonWaiting ||
			c.Message != "Waiting for a disruption slot (1 of 1 in use): held by n2" {
			t.Errorf("Cordoned while waiting: %s %s %q", c.Status, c.Reason, c.Message)
		}
		if c := status.Find(w.last, status.UpdatePrepared); c.Status != metav1.ConditionTrue {
			t.Errorf("UpdatePrepared %s while waiting, want True", c.Status)
		}
	}
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	if !b.waited || b.acquires != 4 || !b.held {
		t.Errorf("waited %v, %d acquires (want 4: cordon, drain, write, reboot), held %v", b.waited, b.acquires, b.held)
	}
	if strings.Join(cl.calls, ",") != "cordon,drain" {
		t.Errorf("cluster calls %v", cl.calls)
	}

	// After the boot: a new daemon, which takes no slot to finish.
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	b2 := &slots{}
	r2 := &phases.Runner{Env: r.Env, Status: stager(w, w.last), Node: "n1", Log: r.Log, Now: r.Now, Phases: phases.All(), Record: rec}
	r2.Env.Disruption = b2
	if err := r2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b2.acquires != 0 || b2.keeps == 0 || b2.releases == 0 || b2.held {
		t.Errorf("after the reboot: %d acquires (want 0), %d keeps, %d releases (want some of both), held %v",
			b2.acquires, b2.keeps, b2.releases, b2.held)
	}
	if c := status.Find(w.last, status.Updated); c.Status != metav1.ConditionTrue {
		t.Errorf("Updated = %s", c.Status)
	}
}

// An update that needs no drain takes no slot.
func TestRunnerRebootlessTakesNoSlot(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/containers/registries.d/a.yaml", "x")}, h, cl, units, w)
	b := &slots{}
	r.Env.Disruption = b
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b.waited || b.held {
		t.Errorf("a rebootless update took a slot (waited %v, held %v)", b.waited, b.held)
	}
}

// A shutdown while waiting for a slot stops the run before the cordon.
func TestRunnerStopsWhileWaitingForSlot(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	stop, cancel := context.WithCancel(context.Background())
	r.Stop = stopOn(t, stop, nil)
	r.Env.Disruption = &slots{block: true, waiting: cancel}
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrStopped) {
		t.Fatalf("Run: %v, want ErrStopped", err)
	}
	if len(cl.calls) != 0 {
		t.Errorf("cluster calls %v after a stop while waiting", cl.calls)
	}
	if rec, _ := progress.Unmarshal(h.state[progress.FileName]); rec.Done("cordon") {
		t.Error("cordon recorded done")
	}
	if c := status.Find(w.last, status.NodeDegraded); c.Status != metav1.ConditionFalse {
		t.Errorf("NodeDegraded = %s after a stop", c.Status)
	}
}

// After the reboot the slot is kept (not waited for) and stays held while
// a failed validation keeps the node cordoned; the uncordon of the retry
// gives it back.
func TestRunnerKeepsSlotWhileValidationFails(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	r.Env.Disruption = &slots{waited: true}
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	// The node comes back with the file changed behind the daemon's back.
	h.files["/etc/motd"] = "tampered"
	var calls []string
	b := &slots{log: &calls}
	env := r.Env
	env.Disruption = b
	run := func() error {
		r2 := &phases.Runner{Env: env, Status: stager(w, w.last), Node: "n1", Log: r.Log, Now: r.Now, Phases: phases.All(), Record: rec}
		return r2.Run(context.Background())
	}
	if err := run(); err == nil || !strings.Contains(err.Error(), "validating") {
		t.Fatalf("Run after the boot: %v, want a validation failure", err)
	}
	if !b.held || b.releases != 0 || b.acquires != 0 || rec.Done("uncordon") {
		t.Errorf("after the failed validation: held %v, %d releases, %d acquires (want held, 0, 0); calls %v",
			b.held, b.releases, b.acquires, calls)
	}
	// The daemon restarts (the reboot step is done): validate keeps the
	// slot again before it fails again.
	b = &slots{log: &calls}
	env.Disruption = b
	if err := run(); err == nil || !b.held || b.keeps == 0 || b.releases != 0 {
		t.Errorf("after a restart and a failed validation: %v; held %v, %d keeps, %d releases (want held, some, 0)",
			err, b.held, b.keeps, b.releases)
	}
	h.files["/etc/motd"] = "x"
	if err := run(); err != nil {
		t.Fatal(err)
	}
	if b.held || b.acquires != 0 {
		t.Errorf("after the update: held %v, %d acquires; calls %v", b.held, b.acquires, calls)
	}
}

// Pods the drain would refuse (no controller) fail the update before the
// cordon: no slot taken, nothing cordoned, NodeDegraded names the pods.
func TestRunnerUndrainableFailsBeforeCordon(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl := &cluster{checkErr: fmt.Errorf("1 pod without a controller that would recreate them: apps/bare: %w", phases.ErrCannotDrain)}
	units, w := &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	b := &slots{waited: true}
	r.Env.Disruption = b
	err := r.Run(context.Background())
	var se *phases.StepError
	if !errors.As(err, &se) || se.Phase != "cordon" || !errors.Is(err, phases.ErrCannotDrain) {
		t.Fatalf("Run: %v, want the cordon step failing on the check", err)
	}
	if len(cl.calls) != 0 || b.acquires != 0 || cl.checks != 1 {
		t.Errorf("cluster calls %v, %d acquires, %d checks: want none, 0, 1", cl.calls, b.acquires, cl.checks)
	}
	r.Fail(context.Background(), err)
	if c := status.Find(w.last, status.NodeDegraded); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "apps/bare") {
		t.Errorf("NodeDegraded = %s %q", c.Status, c.Message)
	}
}

// When this daemon's cordon may still be on the node (an earlier try that
// could not drain was cut short before it uncordoned), the pre-check does
// not fail the update with the node cordoned: the drain fails instead and
// undoes the cordon, then gives the slot back.
func TestRunnerUndrainableWithOurCordonUncordons(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	undrainable := fmt.Errorf("1 pod without a controller that would recreate them: apps/bare: %w", phases.ErrCannotDrain)
	cl := &cluster{checkErr: undrainable, drainErr: undrainable}
	units, w := &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	r.Record.CordonedByUs = true
	b := &slots{waited: true}
	r.Env.Disruption = b
	err := r.Run(context.Background())
	if !errors.Is(err, phases.ErrCannotDrain) {
		t.Fatalf("Run: %v, want the drain failing", err)
	}
	if got := strings.Join(cl.calls, ","); got != "cordon,drain,uncordon" {
		t.Errorf("cluster calls %s, want cordon,drain,uncordon", got)
	}
	if b.releases != 1 || r.Record.CordonedByUs || r.Record.Done("cordon") {
		t.Errorf("%d releases, CordonedByUs %v, cordon done %v: want 1, false, false",
			b.releases, r.Record.CordonedByUs, r.Record.Done("cordon"))
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
		saved = err == nil && rec.CordonedByUs
	}
	if err := r.Run(context.Background()); err == nil {
		t.Fatal("Run succeeded")
	}
	if !saved {
		t.Error("the record on disk did not say CordonedByUs when Cordon ran")
	}
}
