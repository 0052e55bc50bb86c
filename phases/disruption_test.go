package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// slots is a fake disruption budget: the first Acquire finds the slot taken
// and reports so (then calls waiting, from the runner's goroutine) before
// getting it, unless block is set, in which case it waits for ctx.
type slots struct {
	held               bool
	acquires, releases int
	waited             bool
	block              bool
	waiting            func()
}

func (s *slots) Acquire(ctx context.Context, report func(string)) error {
	s.acquires++
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
	s.held = false
	return nil
}

// A drain update waits for a slot with UpdateExecuted and Cordoned False,
// the Cordoned message naming the holder, and cordons only once it holds
// one; every disruptive step checks the slot; after the reboot the node
// finishes without a slot and gives it back at the uncordon.
func TestRunnerWaitsForDisruptionSlot(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemd.Fake{}, &writes{}
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
	r2 := &phases.Runner{Env: r.Env, Status: w, Log: r.Log, Now: r.Now, Phases: phases.All(), Record: rec,
		Conditions: w.last}
	r2.Env.Disruption = b2
	r2.Start("n1")
	r2.Replay()
	if err := r2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b2.acquires != 0 || b2.releases == 0 {
		t.Errorf("after the reboot: %d acquires (want 0), %d releases (want some)", b2.acquires, b2.releases)
	}
	if c := status.Find(w.last, status.Updated); c.Status != metav1.ConditionTrue {
		t.Errorf("Updated = %s", c.Status)
	}
}

// An update that needs no drain takes no slot.
func TestRunnerRebootlessTakesNoSlot(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemd.Fake{}, &writes{}
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
	cl, units, w := &cluster{}, &systemd.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	stop, cancel := context.WithCancel(context.Background())
	r.Shutdown = stop
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
