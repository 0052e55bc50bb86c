package daemon

import (
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// What one pass of the loop does with its node, for every kind of record
// it may find.
func TestDecidePass(t *testing.T) {
	finished := func(cur, des string) *progress.Record {
		r := progress.New(cur, des)
		r.MarkDone(progress.Step{Name: progress.StepResume})
		return r
	}
	underWay := func(cur, des string) *progress.Record {
		r := progress.New(cur, des)
		r.MarkDone(progress.Step{Name: progress.StepDetect})
		return r
	}
	rollingBack := underWay("a", "b")
	rollingBack.Health = &progress.Health{Failed: "unit x failed"}
	kept := underWay("a", "b")
	kept.Health = &progress.Health{Failed: "unit x failed", Kept: true, Retry: "1"}
	passing := underWay("a", "b") // the gate runs, nothing failed yet
	passing.Health = &progress.Health{}

	for _, tc := range []struct {
		name string
		f    passFacts
		want passPlan
	}{
		{"no record, at its config: idle", passFacts{current: "a", desired: "a"}, passPlan{kind: passIdle, from: "a", to: "a"}},
		{"finished update: idle", passFacts{current: "b", desired: "b", rec: finished("a", "b")},
			passPlan{kind: passIdle, from: "b", to: "b"}},
		{"new desired config: update", passFacts{current: "a", desired: "b"}, passPlan{kind: passUpdate, from: "a", to: "b"}},
		{"update under way, desired set back: it is undone", passFacts{current: "a", desired: "a", rec: underWay("a", "b")},
			passPlan{kind: passUpdate, from: "a", to: "a"}},
		{"paused before the update: waits", passFacts{current: "a", desired: "b", paused: true},
			passPlan{kind: passPaused, from: "a", to: "b"}},
		{"paused after a finished update: waits", passFacts{current: "b", desired: "c", rec: finished("a", "b"), paused: true},
			passPlan{kind: passPaused, from: "b", to: "c"}},
		{"paused, at its config: idle", passFacts{current: "a", desired: "a", paused: true},
			passPlan{kind: passIdle, from: "a", to: "a"}},
		{"paused during an update: its own gate waits", passFacts{current: "a", desired: "b", rec: underWay("a", "b"), paused: true},
			passPlan{kind: passUpdate, from: "a", to: "b"}},
		{"paused, no config yet: update (adopt)", passFacts{desired: "b", paused: true},
			passPlan{kind: passUpdate, from: "", to: "b"}},
		{"record lost at its desired config: update from nothing (adopt)",
			passFacts{current: "b", desired: "b", recordLost: true},
			passPlan{kind: passUpdate, from: "", to: "b", why: whyRecordLost}},
		{"reapply at its config: update from nothing (adopt when all matches)",
			passFacts{current: "b", desired: "b", rec: finished("a", "b"), reapply: true},
			passPlan{kind: passUpdate, from: "", to: "b", why: whyReapply}},
		{"reapply, paused: idle until the pause ends", passFacts{current: "b", desired: "b", reapply: true, paused: true},
			passPlan{kind: passIdle, from: "b", to: "b"}},
		{"reapply during an update: the update goes on", passFacts{current: "a", desired: "b", rec: underWay("a", "b"), reapply: true},
			passPlan{kind: passUpdate, from: "a", to: "b"}},
		{"reapply with a new desired config: the update is the reapply", passFacts{current: "a", desired: "b", reapply: true},
			passPlan{kind: passUpdate, from: "a", to: "b"}},
		{"record lost on another config: update from it", passFacts{current: "a", desired: "b", recordLost: true},
			passPlan{kind: passUpdate, from: "a", to: "b", why: whyRecordLost}},
		{"record lost, paused: waits", passFacts{current: "a", desired: "b", recordLost: true, paused: true},
			passPlan{kind: passPaused, from: "a", to: "b"}},
		{"rolling back, desired changed: the rollback first",
			passFacts{current: "a", desired: "c", rec: rollingBack},
			passPlan{kind: passUpdate, from: "a", to: "b", why: whyRollbackFirst}},
		{"rolling back, same desired config: update resumes", passFacts{current: "a", desired: "b", rec: rollingBack},
			passPlan{kind: passUpdate, from: "a", to: "b"}},
		{"gate passing, desired changed: the new config", passFacts{current: "a", desired: "c", rec: passing},
			passPlan{kind: passUpdate, from: "a", to: "c"}},
		{"kept, no retry: nothing", passFacts{current: "a", desired: "b", rec: kept},
			passPlan{kind: passKept, from: "a", to: "a"}},
		{"kept, retry of this try: nothing", passFacts{current: "a", desired: "b", rec: kept, retry: "1"},
			passPlan{kind: passKept, from: "a", to: "a"}},
		{"kept, paused: nothing", passFacts{current: "a", desired: "b", rec: kept, paused: true},
			passPlan{kind: passKept, from: "a", to: "a"}},
		{"kept, new retry: try again", passFacts{current: "a", desired: "b", rec: kept, retry: "2"},
			passPlan{kind: passRetry, from: "a", to: "b"}},
		{"kept, desired changed: the new config", passFacts{current: "a", desired: "c", rec: kept},
			passPlan{kind: passUpdate, from: "a", to: "c"}},
	} {
		if got := decidePass(tc.f); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
