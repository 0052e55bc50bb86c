package eta

import (
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/phases/progress"
)

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		a    *progress.ActionPlan
		want string
	}{
		{nil, ""},
		{&progress.ActionPlan{}, KindNone},
		{&progress.ActionPlan{Reboot: true, Drain: true}, KindReboot},
		{&progress.ActionPlan{Actions: []progress.Action{{Type: "Reload"}}}, KindReload},
		{&progress.ActionPlan{Drain: true}, KindReload},
	} {
		if got := KindOf(tc.a); got != tc.want {
			t.Errorf("KindOf(%+v) = %q, want %q", tc.a, got, tc.want)
		}
	}
}

func TestExpected(t *testing.T) {
	h := History{}
	for _, s := range []float64{10, 30, 20, 400} { // one slow drain
		h.Add(KindReboot, Sample{Phases: map[string]float64{"drain": s, "reboot": 60}})
	}
	h.Add(KindReboot, Sample{Phases: map[string]float64{"reboot": 60}}) // drained nothing
	for _, tc := range []struct {
		kind, phase string
		want        time.Duration
		n           int
	}{
		{KindReboot, "drain", 20 * time.Second, 5}, // median of 0, 10, 20, 30, 400
		{KindReboot, "reboot", time.Minute, 5},
		{KindReboot, "cordon", 0, 5},        // never ran in an update of the kind
		{KindNone, "write", time.Second, 0}, // no history: the default
		{KindNone, "drain", 0, 0},           // a default of another kind does not count
		{KindReboot + "x", "reboot", 0, 0},  // unknown kind: nothing but the common defaults
		{KindReload, progress.StepReloadCRIO, 5 * time.Second, 0},
	} {
		got, n := h.Expected(tc.kind, tc.phase)
		if got != tc.want || n != tc.n {
			t.Errorf("Expected(%s, %s) = %v from %d, want %v from %d", tc.kind, tc.phase, got, n, tc.want, tc.n)
		}
	}
}

func TestAddKeepsTheNewest(t *testing.T) {
	h := History{}
	for i := range MaxSamples + 3 {
		h.Add(KindNone, Sample{Phases: map[string]float64{"write": float64(i)}})
	}
	got := h.Samples[KindNone]
	if len(got) != MaxSamples || got[0].Phases["write"] != 3 || got[MaxSamples-1].Phases["write"] != MaxSamples+2 {
		t.Fatalf("samples %v, want the %d newest", got, MaxSamples)
	}
}

func TestPredict(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	h := History{}
	h.Add(KindNone, Sample{Phases: map[string]float64{"prepare": 2, "write": 3, "finish": 1}})
	run := Run{Desired: "x", Started: now.Add(-time.Minute)}
	names := []string{"detect", "prepare", "write", "finish"}
	done := func(n string) bool { return n == "detect" }
	left := Left(names, done, "prepare")
	if len(left) != 2 || left[0] != "write" {
		t.Fatalf("Left = %v", left)
	}
	e := Predict(h, run, KindNone, left, now)
	if !e.EstimatedFinish.Equal(now.Add(4*time.Second)) || e.BasedOn != 1 || !e.Started.Equal(run.Started) || e.PostAction != KindNone {
		t.Errorf("Predict = %+v", e)
	}
	if e := Predict(h, run, "", left, now); !e.EstimatedFinish.IsZero() {
		t.Errorf("before prepare: %+v, want no estimate", e)
	}
}

func TestDecode(t *testing.T) {
	h := History{}
	h.Add(KindReboot, Sample{Phases: map[string]float64{"reboot": 90}})
	h.Run = &Run{Desired: "x", Whole: true}
	got, err := Decode(h.Encode())
	if err != nil || len(got.Samples[KindReboot]) != 1 || got.Run == nil || !got.Run.Whole {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "{", `{"version":2}`} {
		if got, err := Decode([]byte(bad)); err == nil || got.Version != Version || got.Samples != nil {
			t.Errorf("Decode(%q) = %+v, %v; want an empty history and why", bad, got, err)
		}
	}
}
