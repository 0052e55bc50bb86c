package phases_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

const threeUnits = `{"ignition":{"version":"3.4.0"},"systemd":{"units":[` +
	`{"name":"a.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"},` +
	`{"name":"b.service","enabled":false},{"name":"c.service","mask":true}]}}`

// The write step marks itself started and journals every unit's
// enablement before it changes any unit.
func TestWriteJournalsUnitStatesFirst(t *testing.T) {
	units := &systemdtest.Fake{}
	units.SetEnabled("a.service", "not-found")
	units.SetEnabled("b.service", "enabled")
	units.SetEnabled("c.service", "static")
	h := &host{files: map[string]string{}, state: map[string][]byte{}, sd: units}
	cl, w := &cluster{}, &writes{}
	r := newRunner(configs{"a": empty, "b": threeUnits}, h, cl, units, w)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v, want the reboot", err)
	}
	want := map[string]string{"a.service": "not-found", "b.service": "enabled", "c.service": "static"}
	for u, s := range want {
		if h.unitStates[u] != s {
			t.Errorf("journaled %s as %q, want %q (journal %v)", u, h.unitStates[u], s, h.unitStates)
		}
	}
	for _, c := range h.callsAtRecord {
		if !strings.HasPrefix(c, "is-enabled") && c != "boot-id" { // reads only
			t.Errorf("systemd call %q before the units' states were journaled", c)
		}
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Write.Started || !rec.Done("write") {
		t.Errorf("record: write started %v, steps %v", rec.Write.Started, rec.Steps)
	}
}

// An update replaced while it was writing is rolled back from its journal
// by the give-back step; the status says what was rolled back, and the
// give-back says so too.
func TestGiveBackRollsBackReplacedWrite(t *testing.T) {
	h := &host{files: map[string]string{"/etc/x": "b"}, state: map[string][]byte{}, written: []string{"/etc/x", "/etc/y"},
		pending: []string{"b"}, unitStates: map[string]string{"a.service": "enabled"}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	old := progress.New("a", "b")
	old.Write.Started = true
	old.Cordon.ByUs, old.Cordon.Own = true, true
	old.MarkDone(progress.Step{Name: "detect"})
	old.MarkDone(progress.Step{Name: "cordon"})
	r := newRunner(configs{"a": empty, "b": file("/etc/x", "b"), "c": empty}, h, cl, units, w)
	r.Record = progress.Replacing(old, "a", "c")
	r.Phases = []phases.Item{phases.GiveBack()}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := status.Find(w.last, status.AppliedFilesAndOS)
	for _, want := range []string{"Rolled back the write of b", "restored 2 paths", "enablement of 1 unit (a.service)"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q lacks %q", c.Message, want)
		}
	}
	if c.Status != metav1.ConditionFalse || c.Reason != phases.ReasonRolledBack {
		t.Errorf("AppliedFilesAndOS = %s %s %q", c.Status, c.Reason, c.Message)
	}
	if !h.rolled || len(h.pending) != 0 {
		t.Errorf("rolled back %v, pending %v", h.rolled, h.pending)
	}
	if st := r.Record.Step("give-back"); st == nil ||
		!strings.HasSuffix(st.Message, "uncordoned the node, what was written was rolled back") {
		t.Errorf("give-back step %+v", st)
	}
	if c := status.Find(w.last, status.Cordoned); c.Status != metav1.ConditionFalse ||
		!strings.Contains(c.Message, "what it had written was rolled back") {
		t.Errorf("Cordoned = %s %q", c.Status, c.Message)
	}
	// Again (a crash after the rollback): nothing left to roll back.
	h.rolled = false
	r.Record.Forget("give-back")
	if err := r.Run(context.Background()); err != nil || h.rolled {
		t.Errorf("second give-back: rolled back %v, %v", h.rolled, err)
	}
}

func TestCleanLeftovers(t *testing.T) {
	written := progress.New("a", "b")
	written.Write.Started = true
	written.MarkDone(progress.Step{Name: "write"})
	notStarted := progress.New("a", "b")
	rollingBack := progress.New("a", "b")
	rollingBack.Write.Started = true
	rollingBack.MarkDone(progress.Step{Name: "write"})
	rollingBack.Health = &progress.Health{Failed: "unit x failed"}
	rolledBack := progress.New("a", "b")
	rolledBack.Write.Started = true
	rolledBack.MarkDone(progress.Step{Name: "write"})
	rolledBack.Health = &progress.Health{Failed: "unit x failed", Steps: []progress.Step{{Name: "write"}}}
	for _, tc := range []struct {
		name     string
		rec      *progress.Record
		pending  []string
		left     []string
		rolled   bool
		warnings int
		says     string
	}{
		{"no record: rolled back", nil, []string{"old"}, nil, true, 0, "Rolled back the unfinished write of old"},
		{"the current update's own", notStarted, []string{"b"}, []string{"b"}, false, 0, ""},
		{"before a write that has not begun", notStarted, []string{"old"}, nil, true, 0, "Rolled back"},
		{"committed", written, []string{"b"}, nil, false, 0, "whose write had finished"},
		{"older than a write", written, []string{"old"}, nil, false, 1, "without rolling it back"},
		{"the health gate's rollback, resumed", rollingBack, []string{"rollback-b"}, []string{"rollback-b"}, false, 0, ""},
		{"the health gate's rollback, committed", rolledBack, []string{"rollback-b"}, nil, false, 0, "whose write had finished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{"/etc/x": "1"}, state: map[string][]byte{}, pending: slices.Clone(tc.pending)}
			done, err := phases.CleanLeftovers(h, tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(h.pending, tc.left) || h.rolled != tc.rolled {
				t.Errorf("pending %v, rolled back %v; want %v, %v", h.pending, h.rolled, tc.left, tc.rolled)
			}
			warnings := 0
			for _, l := range done {
				if l.Warning {
					warnings++
				}
				if !strings.Contains(l.Message, tc.says) {
					t.Errorf("message %q lacks %q", l.Message, tc.says)
				}
			}
			if warnings != tc.warnings || (tc.says != "" && len(done) != 1) {
				t.Errorf("%d warnings in %+v, want %d", warnings, done, tc.warnings)
			}
		})
	}
}
