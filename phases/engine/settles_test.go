package engine_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

func settled(t, msg string) engine.Condition {
	return engine.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, Message: msg}
}

// A step changes the status beyond its own condition only through values
// the runner stages: its Outcome's Settles (however the step ends: done,
// failed, or an End), a Report's parts, an Undo's and a Reload's Settles.
func TestSettles(t *testing.T) {
	errEnd := errors.New("going down")
	var b *bed
	begin := step("begin", engine.Show{Condition: status.Drained})
	reset := engine.Step[*data]{Name: "reset", Run: func(context.Context, *data) (engine.Outcome, error) {
		return engine.Outcome{Settles: engine.Settles{Reset: true, Desired: "v2",
			Conditions: []engine.Condition{settled(status.Updated, "updating")}}}, nil
	}}
	parts := engine.Step[*data]{Name: "parts", Show: engine.Show{Condition: "Parts"},
		Run: func(ctx context.Context, d *data) (engine.Outcome, error) {
			_ = d.r.Report(ctx, "working", engine.Condition{Type: "Part", Status: metav1.ConditionUnknown, Reason: "Part", Message: "part"})
			if s, m := cond(b, "Part"); s != metav1.ConditionUnknown || m != "part" {
				t.Errorf("while the step runs, its part is %s %q", s, m)
			}
			if n := len(b.w.snaps); n == 0 || !hasCond(b.w.snaps[n-1], "Part") {
				t.Error("the report was not written with its part")
			}
			return engine.Outcome{Settles: engine.Settles{Conditions: []engine.Condition{settled("Part", "done")}}}, nil
		}}
	end := engine.Step[*data]{Name: "end", Run: func(context.Context, *data) (engine.Outcome, error) {
		return engine.Outcome{Settles: engine.Settles{Current: "v2", Conditions: []engine.Condition{settled("Ending", "ended")}}}, errEnd
	}}
	list := []engine.Item[*data]{begin, reset, parts, end}
	b = newBed(list)
	b.r.Ends = []engine.End{{Err: errEnd, Log: "ends"}}
	if err := b.r.Run(context.Background(), nil); !errors.Is(err, errEnd) {
		t.Fatalf("run: %v, want the End", err)
	}
	if s, _ := cond(b, status.Drained); s != metav1.ConditionFalse {
		t.Errorf("the reset left %s %s", status.Drained, s)
	}
	for c, want := range map[string]string{status.Updated: "updating", "Part": "done", "Ending": "ended"} {
		if s, m := cond(b, c); s != metav1.ConditionTrue || m != want {
			t.Errorf("%s is %s %q, want True %q", c, s, m, want)
		}
	}
	if cur, des := b.r.Status.Versions(); cur != "v2" || des != "v2" {
		t.Errorf("versions %q %q, want v2 v2", cur, des)
	}

	// A failure: what the step settled before it failed stands.
	failing := engine.Step[*data]{Name: "failing", Run: func(context.Context, *data) (engine.Outcome, error) {
		return engine.Outcome{Settles: engine.Settles{Conditions: []engine.Condition{settled("Given", "given back")}}},
			errors.New("broken")
	}}
	f := newBed([]engine.Item[*data]{failing})
	var se *engine.StepError
	if err := f.r.Run(context.Background(), nil); !errors.As(err, &se) {
		t.Fatalf("failing run: %v", err)
	}
	if s, _ := cond(f, "Given"); s != metav1.ConditionTrue {
		t.Errorf("a failed step's settles were not staged: Given %s", s)
	}

	// A resumed run stages what a done step's Reload settles.
	reloaded := step("reloaded", engine.Show{})
	reloaded.Reload = func(context.Context, *data) (engine.Settles, error) {
		return engine.Settles{Conditions: []engine.Condition{settled("Reloaded", "again")}}, nil
	}
	r := newBed([]engine.Item[*data]{reloaded})
	r.rec.MarkDone(progress.Step{Name: "reloaded", Message: "reloaded done"})
	if err := r.r.Run(context.Background(), []string{"reloaded"}); err != nil {
		t.Fatal(err)
	}
	if s, m := cond(r, "Reloaded"); s != metav1.ConditionTrue || m != "again" {
		t.Errorf("Reloaded %s %q after the resume", s, m)
	}
}

func hasCond(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return true
		}
	}
	return false
}
