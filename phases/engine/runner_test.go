package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// data is what the test steps see: what ran, and the runner's services.
type data struct {
	ran []string
	r   *engine.Runner[*data]
}

type writer struct{ snaps [][]metav1.Condition }

func (w *writer) WriteStatus(_ context.Context, s status.Snapshot) error {
	w.snaps = append(w.snaps, slices.Clone(s.Conditions))
	return nil
}

type observer struct{ calls []string }

func (o *observer) PhaseStarted(s string)               { o.calls = append(o.calls, "start "+s) }
func (o *observer) PhaseDone(s string, _ time.Duration) { o.calls = append(o.calls, "done "+s) }
func (o *observer) Waiting(string)                      {}

// bed is a runner of list over a fresh record, status and observer.
type bed struct {
	d     *data
	rec   *engine.Memory
	w     *writer
	obs   *observer
	saves int
	r     *engine.Runner[*data]
}

func newBed(list []engine.Item[*data]) *bed {
	b := &bed{d: &data{}, rec: &engine.Memory{}, w: &writer{}, obs: &observer{}}
	st := status.NewStager(b.w, time.Now, status.Snapshot{})
	b.r = &engine.Runner[*data]{
		Data: b.d, List: list, Record: b.rec, Save: func() error { b.saves++; return nil },
		Status: st, Flush: st.Flush,
		Groups:   func(c string) (string, string) { return c + " starting", c + " done" },
		Observer: b.obs, Log: zap.NewNop(), Now: time.Now,
	}
	b.d.r = b.r
	return b
}

// step is a step that records that it ran.
func step(name string, show engine.Show) engine.Step[*data] {
	return engine.Step[*data]{Name: name, Show: show, Run: func(_ context.Context, d *data) (engine.Outcome, error) {
		d.ran = append(d.ran, name)
		return engine.Outcome{Message: name + " done"}, nil
	}}
}

// cond is condition t as staged (the runner's caller writes the last
// changes as the run ends).
func cond(b *bed, t string) (metav1.ConditionStatus, string) {
	if c := b.r.Status.Find(t); c != nil {
		return c.Status, c.Message
	}
	return "", ""
}

// A group is a value: its condition goes Unknown as its first step
// starts and True once its last is done; a step's own condition reports
// it; a step not needed is recorded skipped, with why; a resumed run skips
// what is done.
func TestGroupsAndSkips(t *testing.T) {
	skipped := step("skipped", engine.Show{Condition: "Second"})
	skipped.Needed = func(*data) (bool, string) { return false, "not today" }
	list := []engine.Item[*data]{
		step("first", engine.Show{Quick: true}),
		engine.Group[*data]{Condition: "Group", Items: []engine.Item[*data]{
			step("one", engine.Show{Condition: "One", Starting: "One starting"}),
			skipped,
		}},
	}
	b := newBed(list)
	if err := b.r.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.d.ran, []string{"first", "one"}) {
		t.Errorf("ran %v", b.d.ran)
	}
	if st := b.rec.Step("skipped"); st == nil || !st.Skipped || st.Message != "not today" {
		t.Errorf("skipped recorded as %+v", st)
	}
	if s, m := cond(b, "Group"); s != metav1.ConditionTrue || m != "Group done" {
		t.Errorf("Group %s %q", s, m)
	}
	if s, _ := cond(b, "Second"); s != metav1.ConditionFalse {
		t.Errorf("the skipped step's condition is %s, want False", s)
	}
	if !slices.Contains(b.obs.calls, "done one") || slices.Contains(b.obs.calls, "start skipped") {
		t.Errorf("observer told %v", b.obs.calls)
	}
	again := newBed(list)
	again.rec = b.rec
	again.r.Record = b.rec
	if err := again.r.Run(context.Background(), []string{"first", "one", "skipped"}); err != nil || len(again.d.ran) != 0 {
		t.Errorf("resumed: %v, ran %v", err, again.d.ran)
	}
}

// A made-up gate is one value and one line of a list: it holds the step
// after it, only when that step is needed, and a new desired config
// during its wait cuts the step: its Undo runs with the cause, the gate's
// Release too, and nothing of the step is done.
func TestMadeUpGate(t *testing.T) {
	changed := make(chan struct{})
	var released, undone atomic.Bool
	var cause error
	lease := engine.Gate[*data]{Name: "lease",
		Wait: func(ctx context.Context, d *data) error {
			_ = d.r.Report(ctx, "waiting for the lease")
			close(changed)
			<-ctx.Done()
			return ctx.Err()
		},
		Release: func(context.Context, *data) { released.Store(true) },
	}
	held := step("held", engine.Show{Condition: "Held", Starting: "Holding"})
	held.Cut = &engine.Cut[*data]{Undo: func(_ context.Context, _ *data, c error) (engine.Settles, error) {
		undone.Store(true)
		cause = c
		return engine.Settles{Conditions: []engine.Condition{{Type: "Given", Status: metav1.ConditionTrue, Reason: "Given",
			Message: "given back"}}}, nil
	}}
	list := []engine.Item[*data]{step("before", engine.Show{}), lease, held, engine.Commit[*data]{}, step("after", engine.Show{})}
	b := newBed(list)
	b.r.Stop = engine.Signals{Superseded: func() bool {
		select {
		case <-changed:
			return true
		default:
			return false
		}
	}}
	err := b.r.Run(context.Background(), nil)
	if !errors.Is(err, engine.ErrSuperseded) || !undone.Load() || !errors.Is(cause, engine.ErrSuperseded) || !released.Load() {
		t.Fatalf("Run %v; undone %v with %v; released %v", err, undone.Load(), cause, released.Load())
	}
	if !slices.Equal(b.d.ran, []string{"before"}) || b.rec.Step("held") != nil {
		t.Errorf("ran %v, record %+v", b.d.ran, b.rec)
	}
	if s, m := cond(b, "Held"); s != metav1.ConditionFalse || m != "waiting for the lease" {
		t.Errorf("while the gate waited, Held said %s %q", s, m)
	}
	if s, m := cond(b, "Given"); s != metav1.ConditionTrue || m != "given back" {
		t.Errorf("the Undo's settles were not staged: Given %s %q", s, m)
	}
	if p := engine.Places(list)["held"]; !slices.Equal(p.Gates, []string{"lease"}) || engine.Places(list)["after"].Commit != true {
		t.Errorf("places %+v", engine.Places(list))
	}
}

// A made-up step is one line inside a group: it runs in its place and
// reports through its group; the group ends True only after it.
func TestMadeUpStepInGroup(t *testing.T) {
	list := []engine.Item[*data]{engine.Group[*data]{Condition: "Group", Items: []engine.Item[*data]{
		step("one", engine.Show{}), step("two", engine.Show{}),
	}}}
	list2 := engine.Insert(list, "one", engine.Item[*data](step("audit", engine.Show{})))
	b := newBed(list2)
	if err := b.r.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.d.ran, []string{"one", "audit", "two"}) || engine.Places(list2)["audit"].Group != "Group" {
		t.Errorf("ran %v, places %+v", b.d.ran, engine.Places(list2))
	}
	if len(engine.Steps(list)) != 2 {
		t.Error("Insert changed the list it was given")
	}
}

// A sub-list runs on the same runner: its steps are saved once done in
// their own record, not told to the observer (the parent step is), and a run
// that ended for a reboot resumes after the last step done, never running
// one twice; a failure comes back as the sub-step gave it.
func TestSubListResumes(t *testing.T) {
	errReboot := errors.New("rebooting")
	sub := &engine.Memory{}
	rebooted := false
	var subRan []string
	subStep := func(name string) engine.Item[*data] {
		return engine.Step[*data]{Name: name, Run: func(context.Context, *data) (engine.Outcome, error) {
			subRan = append(subRan, name)
			if name == "reboot" && !rebooted {
				rebooted = true
				return engine.Outcome{}, errReboot
			}
			return engine.Outcome{Message: name + " done"}, nil
		}}
	}
	subList := []engine.Item[*data]{subStep("write"), subStep("reboot"), subStep("check")}
	parent := engine.Step[*data]{Name: "health", Show: engine.Show{Condition: "Health", Starting: "Checking"},
		Run: func(ctx context.Context, d *data) (engine.Outcome, error) {
			return engine.Outcome{Message: "rolled back"}, d.r.RunSub(ctx, "rollback", sub, subList)
		}}
	for i, want := range []error{errReboot, nil} {
		b := newBed([]engine.Item[*data]{parent})
		b.r.Ends = []engine.End{{Err: errReboot, Log: "rebooting"}}
		if err := b.r.Run(context.Background(), nil); !errors.Is(err, want) {
			t.Fatalf("run %d: %v, want %v", i, err, want)
		}
		if i == 0 && (sub.Step("write") == nil || sub.Step("reboot") != nil || slices.Contains(b.obs.calls, "done rollback-write")) {
			t.Fatalf("after the reboot's request: %+v, observer %v", sub, b.obs.calls)
		}
	}
	if want := []string{"write", "reboot", "reboot", "check"}; !slices.Equal(subRan, want) {
		t.Errorf("ran %v, want %v", subRan, want)
	}
	boom := errors.New("boom")
	failing := []engine.Item[*data]{engine.Step[*data]{Name: "fails", Run: func(context.Context, *data) (engine.Outcome, error) {
		return engine.Outcome{}, boom
	}}}
	b := newBed([]engine.Item[*data]{engine.Step[*data]{Name: "p", Run: func(ctx context.Context, d *data) (engine.Outcome, error) {
		err := d.r.RunSub(ctx, "s", sub, failing)
		var se *engine.StepError
		if errors.As(err, &se) {
			t.Errorf("the sub-step's failure came back wrapped: %v", err)
		}
		return engine.Outcome{}, err
	}}})
	if err := b.r.Run(context.Background(), nil); !errors.Is(err, boom) || sub.Step("fails") != nil {
		t.Errorf("a failing sub-step: %v", err)
	}
}

// A step with a Cut sees the stop as its context: a shutdown cancels it
// a grace period later with ErrStopped, and the run stops without Undo;
// a step without one runs to its end.
func TestCutStepStops(t *testing.T) {
	shutdown, cancel := context.WithCancel(context.Background())
	var undone atomic.Bool
	long := engine.Step[*data]{Name: "long", Cut: &engine.Cut[*data]{Undo: func(context.Context, *data, error) (engine.Settles, error) {
		undone.Store(true)
		return engine.Settles{}, nil
	}}, Run: func(ctx context.Context, _ *data) (engine.Outcome, error) {
		cancel()
		<-ctx.Done()
		return engine.Outcome{}, ctx.Err()
	}}
	b := newBed([]engine.Item[*data]{long, step("next", engine.Show{})})
	b.r.Stop = engine.Signals{Shutdown: shutdown, Grace: 50 * time.Millisecond}
	if err := b.r.Run(context.Background(), nil); !errors.Is(err, engine.ErrStopped) || undone.Load() || len(b.d.ran) != 0 {
		t.Errorf("Run %v, undone %v, ran %v", err, undone.Load(), b.d.ran)
	}
}
