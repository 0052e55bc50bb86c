package daemon

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/nodeconfd/nodeconfd/daemon/eta"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// etaRun plays an update's phases to an ETA observer as the runner tells
// them, each phase taking took on the clock, and returns the ETA staged
// after each phase (by name).
type etaRun struct {
	t     *testing.T
	now   time.Time
	host  *stateHost
	st    *status.Stager
	names []string
}

func (r *etaRun) observer(rec *progress.Record) phases.Observer {
	d := &Daemon{status: r.st, Env: phases.Env{Ports: phases.Ports{Host: r.host}}, Now: func() time.Time { return r.now },
		Log: zaptest.NewLogger(r.t)}
	var list []phases.Item
	for _, n := range r.names {
		list = append(list, phases.Step{Name: n})
	}
	return d.observeETA(nil, rec, list)
}

// play runs the phases from..to of rec's update (the record gets the post
// action once prepare is done), each taking took.
func (r *etaRun) play(o phases.Observer, rec *progress.Record, action *progress.ActionPlan, phasesRun []string, took time.Duration) map[string]status.ETA {
	seen := map[string]status.ETA{}
	for _, p := range phasesRun {
		o.PhaseStarted(p)
		r.now = r.now.Add(took)
		if p == progress.StepPrepare {
			rec.Prepare.Action = action
		}
		o.PhaseDone(p, took)
		rec.MarkDone(progress.Step{Name: p})
		seen[p] = *r.st.ETA()
	}
	return seen
}

func TestETAFromTheNodesOwnUpdates(t *testing.T) {
	start := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	names := []string{progress.StepDetect, progress.StepPrepare, progress.StepWrite, progress.StepPostAction,
		progress.StepSetCurrent, progress.StepResume}
	r := &etaRun{t: t, now: start, host: &stateHost{files: map[string]string{}}, names: names}
	r.st = status.NewStager(nil, func() time.Time { return r.now }, status.Snapshot{})
	none := &progress.ActionPlan{}

	// The first update of its kind: the defaults (prepare, write, finish 1 s each).
	rec := progress.New("a", "b")
	seen := r.play(r.observer(rec), rec, none, names, 2*time.Second)
	if e := seen[progress.StepDetect]; e.PostAction != "" || !e.EstimatedFinish.IsZero() || !e.Started.Equal(start) {
		t.Errorf("before prepare: %+v, want the start alone", e)
	}
	e := seen[progress.StepPrepare]
	if e.PostAction != eta.KindNone || e.BasedOn != 0 || !e.EstimatedFinish.Equal(start.Add(4*time.Second+2*time.Second)) {
		t.Errorf("after prepare: %+v, want the defaults (2 s from the end of prepare)", e)
	}
	if e := seen[progress.StepResume]; !e.EstimatedFinish.IsZero() || !e.Finished.Equal(start.Add(12*time.Second)) {
		t.Errorf("done: %+v, want the finish and no estimate", e)
	}

	// The second: from the first (each phase 2 s), from a new observer as
	// after a restart of the daemon.
	r.now = start.Add(time.Hour)
	rec = progress.New("b", "c")
	seen = r.play(r.observer(rec), rec, none, names, 2*time.Second)
	if e := seen[progress.StepPrepare]; e.BasedOn != 1 || !e.EstimatedFinish.Equal(r.now.Add(-8*time.Second+8*time.Second)) {
		t.Errorf("second update, after prepare: %+v, want 8 s from %v", e, r.now.Add(-8*time.Second))
	}
}

func TestETAAcrossTheReboot(t *testing.T) {
	start := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	names := []string{progress.StepDetect, progress.StepPrepare, progress.StepReboot, progress.StepResume}
	r := &etaRun{t: t, now: start, host: &stateHost{files: map[string]string{}}, names: names}
	r.st = status.NewStager(nil, func() time.Time { return r.now }, status.Snapshot{})
	reboot := &progress.ActionPlan{Reboot: true}
	rec := progress.New("a", "b")
	o := r.observer(rec)
	r.play(o, rec, reboot, names[:2], time.Second)
	o.PhaseStarted(progress.StepReboot) // the process ends with the boot
	if r.host.files[eta.FileName] == "" {
		t.Fatal("the run was not saved before the reboot")
	}
	r.now = r.now.Add(time.Minute)
	r.st = status.NewStager(nil, func() time.Time { return r.now }, status.Snapshot{})
	r.play(r.observer(rec), rec, reboot, names[2:], 30*time.Second) // the next process
	h, err := eta.Decode([]byte(r.host.files[eta.FileName]))
	if err != nil || h.Run != nil || len(h.Samples[eta.KindReboot]) != 1 {
		t.Fatalf("history %+v, %v: want one reboot sample", h, err)
	}
	if got := h.Samples[eta.KindReboot][0].Phases; got[progress.StepReboot] != 30 || got[progress.StepPrepare] != 1 {
		t.Errorf("sample %v", got)
	}
	if e := r.st.ETA(); !e.Started.Equal(start) {
		t.Errorf("started %v, want the update's start before the boot, %v", e.Started, start)
	}
}

func TestETATakenBackOnFailure(t *testing.T) {
	r := &etaRun{t: t, now: time.Now(), host: &stateHost{files: map[string]string{}}, names: []string{progress.StepDetect, progress.StepPrepare, progress.StepWrite}}
	r.st = status.NewStager(nil, func() time.Time { return r.now }, status.Snapshot{})
	rec := progress.New("a", "b")
	o := r.observer(rec)
	r.play(o, rec, &progress.ActionPlan{}, r.names[:2], time.Second)
	if r.st.ETA().EstimatedFinish.IsZero() {
		t.Fatal("no estimate after prepare")
	}
	o.UpdateFinished(phases.ResultFailed)
	if e := r.st.ETA(); !e.EstimatedFinish.IsZero() || e.Started.IsZero() {
		t.Errorf("after a failure: %+v, want the start and no estimate", e)
	}
}

// An adoption that completes is no update: no ETA is staged for it.
func TestETANotForAnAdoption(t *testing.T) {
	r := &etaRun{t: t, now: time.Now(), host: &stateHost{files: map[string]string{}}, names: []string{progress.StepAdopt, progress.StepDetect}}
	r.st = status.NewStager(nil, func() time.Time { return r.now }, status.Snapshot{})
	o := r.observer(progress.New("", "b"))
	o.PhaseStarted(progress.StepAdopt)
	o.PhaseDone(progress.StepAdopt, time.Second)
	if e := r.st.ETA(); e != nil {
		t.Errorf("adoption staged %+v", e)
	}
}
