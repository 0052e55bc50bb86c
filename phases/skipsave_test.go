package phases_test

import (
	"context"
	"slices"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// A skipped step is saved with the next save, not on its own: a rebootless
// update writes its record once per step that ran (and once more as its
// write starts), and the record on disk still ends with every step, the
// skipped ones too, also when the list ends in skipped steps.
func TestSkippedStepsSavedWithTheNext(t *testing.T) {
	for _, tc := range []struct {
		name      string
		endInSkip bool
	}{{"update", false}, {"list ending in a skipped step", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			r := newRunner(configs{"a": empty, "b": file("/etc/containers/registries.d/a.yaml", "x")}, h, cl, units, w)
			if tc.endInSkip {
				r.Phases = append(slices.Clone(r.Phases), phases.Step{Name: "made-up",
					Needed: func(phases.Data) (bool, string) { return false, "never needed" }})
			}
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			rec, err := progress.Unmarshal(h.state[progress.FileName])
			if err != nil {
				t.Fatal(err)
			}
			ran, skipped := 0, 0
			for _, p := range engine.Steps(r.Phases) {
				st := rec.Step(p.Name)
				switch {
				case st == nil:
					t.Errorf("step %s not in the saved record", p.Name)
				case st.Skipped:
					skipped++
				default:
					ran++
				}
			}
			if skipped == 0 {
				t.Fatal("no step skipped: the test shows nothing")
			}
			want := ran + 1 // the write marks itself started
			if tc.endInSkip {
				want++ // the trailing skipped step's own save
			}
			if h.saves != want {
				t.Errorf("%d saves of the record for %d steps run and %d skipped, want %d", h.saves, ran, skipped, want)
			}
		})
	}
}
