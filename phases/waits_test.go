package phases_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// fakeWaits holds the update for the first holds checks (each ending
// soon, so the gate looks again at once), and reports a pause while paused.
type fakeWaits struct {
	mu     sync.Mutex
	hold   phases.Hold
	holds  int
	checks int
	paused bool
	// onCheck, when set, runs at each Check while it holds.
	onCheck func()
	// failFirst fails the first Check.
	failFirst bool
}

func (f *fakeWaits) Paused() (phases.Hold, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return phases.Hold{Kind: phases.HoldPaused, Message: "Paused by test"}, f.paused
}

func (f *fakeWaits) Check(context.Context, bool) (phases.Hold, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	if f.failFirst && f.checks == 1 {
		return phases.Hold{}, errors.New("connection refused")
	}
	if f.checks > f.holds {
		return phases.Hold{}, nil
	}
	if f.onCheck != nil {
		f.onCheck()
	}
	h := f.hold
	h.Until = time.Now().Add(10 * time.Millisecond)
	return h, nil
}

type waitLog struct {
	mu      sync.Mutex
	reasons []string
}

// waitLog is an Observer that records the changes of what the update
// waits for (Waiting is idempotent, so a repeated reason is no change).
func (l *waitLog) Waiting(r string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := ""
	if n := len(l.reasons); n > 0 {
		last = l.reasons[n-1]
	}
	if r != last {
		l.reasons = append(l.reasons, r)
	}
}
func (l *waitLog) PhaseStarted(string)             {}
func (l *waitLog) PhaseDone(string, time.Duration) {}
func (l *waitLog) UpdateFinished(string)           {}

// A rebootless update held by a pause waits in the gate before its write:
// UpdateExecuted says what it waits for (reason Waiting), an Event marks
// the wait's start and end, the metrics hook hears of both.
func TestGateHoldsRebootlessUpdate(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/var/lib/kubelet/config.json", "x")}, h, cl, units, w)
	ev := events{}
	r.Events = ev
	wl := &waitLog{}
	r.Env.Observer = wl
	fw := &fakeWaits{hold: phases.Hold{Kind: phases.HoldPaused, Message: "Paused by annotation x"}, holds: 2}
	fw.onCheck = func() {
		if len(h.written) != 0 {
			t.Errorf("written while held: %v", h.written)
		}
		// What was decided before the wait is on disk while it waits.
		if rec, err := progress.Unmarshal(h.state[progress.FileName]); err != nil || rec.Step(progress.StepDrain) == nil {
			t.Errorf("the record on disk while held lacks the skipped drain (err %v)", err)
		}
		if fw.checks > 1 {
			if c := status.Find(w.last, status.UpdateExecuted); c.Status != metav1.ConditionFalse ||
				c.Reason != status.ReasonWaiting || c.Message != "Paused by annotation x" {
				t.Errorf("UpdateExecuted while held: %s %s %q", c.Status, c.Reason, c.Message)
			}
		}
	}
	r.Env.Waits = fw
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.files["/var/lib/kubelet/config.json"] != "x" {
		t.Error("not written after the hold")
	}
	if !strings.Contains(ev[phases.HoldPaused], "Update to b waits: Paused by annotation x") ||
		!strings.Contains(ev["WaitEnded"], "no longer waits (Paused for") {
		t.Errorf("events %v", ev)
	}
	if got := strings.Join(wl.reasons, ","); got != "Paused," {
		t.Errorf("metrics hook heard %q, want Paused then none", got)
	}
}

// A reboot update outside a window waits before the cordon: Cordoned says
// so, nothing is cordoned or checked until the hold ends; the steering taint
// is on while it waits, and off before the cordon.
func TestGateHoldsCordon(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	fw := &fakeWaits{hold: phases.Hold{Kind: phases.HoldWindow, Message: "Outside the maintenance windows"}, holds: 3}
	fw.onCheck = func() {
		if len(cl.calls) != 0 || cl.checks != 0 {
			t.Errorf("while held: cluster calls %v, %d checks", cl.calls, cl.checks)
		}

		if fw.checks > 1 {
			if c := status.Find(w.last, status.Cordoned); c.Reason != status.ReasonWaiting || c.Message != "Outside the maintenance windows" {
				t.Errorf("Cordoned while held: %s %q", c.Reason, c.Message)
			}
			if got := strings.Join(cl.steers, ","); got != "on" {
				t.Errorf("steering taint while held: %q, want on", got)
			}
		}
	}
	r.Env.Waits = fw
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	if got := strings.Join(cl.calls, ","); got != "cordon,drain" {
		t.Errorf("cluster calls %s", got)
	}
	if got := strings.Join(cl.steers, ","); got != "on,off" {
		t.Errorf("steering taint %q, want on then off", got)
	}
}

// A pause during a drain stops it: the cordon is lifted, Cordoned says it was the pause, and the run stops with ErrPaused
// (its own cause, not a new desired config's: the daemon runs it again at once, into the gate).
func TestPauseStopsDrain(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{drainBlocks: true}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	fw := &fakeWaits{}
	cl.onDrain = func() { fw.mu.Lock(); fw.paused = true; fw.mu.Unlock() }
	r.Env.Waits = fw
	o := &observer{}
	r.Env.Observer = o
	err := r.Run(context.Background())
	if !errors.Is(err, phases.ErrPaused) || errors.Is(err, phases.ErrSuperseded) {
		t.Fatalf("Run: %v, want ErrPaused", err)
	}
	for _, c := range o.calls {
		if strings.HasPrefix(c, "finished") {
			t.Errorf("observer told %q: a paused update has not finished", c)
		}
	}
	if got := strings.Join(cl.calls, ","); got != "cordon,drain,uncordon" {
		t.Errorf("cluster calls %s", got)
	}
	if r.Record.Done("cordon") || r.Record.Cordon.ByUs || len(h.written) != 0 {
		t.Errorf("after the pause: steps %+v, written %v", r.Record.Steps, h.written)
	}
	if c := status.Find(w.last, status.Cordoned); c.Status != metav1.ConditionFalse ||
		!strings.Contains(c.Message, "Uncordoned: the node was paused before anything was written (Paused by test)") {
		t.Errorf("Cordoned = %s %q", c.Status, c.Message)
	}
}

// A check that fails (the API server away) keeps the update waiting, and
// says why, instead of failing it.
func TestGateRetriesFailedCheck(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/var/lib/kubelet/config.json", "x")}, h, cl, units, w)
	fw := &fakeWaits{failFirst: true}
	r.Env.Waits = fw
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fw.checks != 2 || h.files["/var/lib/kubelet/config.json"] != "x" {
		t.Errorf("%d checks, files %v", fw.checks, h.files)
	}
	if c := status.Find(w.last, status.NodeDegraded); c.Status != metav1.ConditionFalse {
		t.Errorf("NodeDegraded = %s after a failed check", c.Status)
	}
}
