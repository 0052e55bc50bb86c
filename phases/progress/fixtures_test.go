package progress

import (
	"os"
	"path/filepath"
	"testing"
)

// Records as today's release (record version 1) writes them, kept as
// files: a daemon of a later release must resume each (a mid-reboot
// update, a health gate's rollback before its reboot came back, an update
// replacing an unfinished one). A change of the format bumps Version and
// adds a one-way migration that this test then holds to these files.
func TestRecordsOfVersion1Resume(t *testing.T) {
	load := func(name string) *Record {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("testdata", "v1", name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Unmarshal(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	r := load("rebooting.json")
	if !r.Done(StepWrite) || r.Done(StepReboot) || r.RebootFromBootID == "" || !r.CordonedByUs || !r.WriteStarted ||
		r.Action == nil || !r.Action.Reboot || r.RebootRequestedAt.IsZero() {
		t.Errorf("rebooting.json read as %+v", r)
	}
	if st := r.Step(StepFailedElsewhere); st == nil || !st.Skipped {
		t.Errorf("rebooting.json: the skipped step reads %+v", st)
	}
	r = load("health-rollback.json")
	h := r.Health
	if h == nil || h.Failed == "" || h.Kept || !h.Done(RollbackWrite) || h.Done(RollbackPost) || h.RebootFromBootID == "" {
		t.Errorf("health-rollback.json read as %+v", h)
	}
	r = load("replacing.json")
	if r.Replaced == nil || !r.Replaced.Cordoned || !r.Replaced.WriteStarted || len(r.EarlierKernelArgs) != 1 || len(r.Steps) != 0 {
		t.Errorf("replacing.json read as %+v", r)
	}
}
