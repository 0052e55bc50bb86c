package progress

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Records as today's release (record version 1) writes them, kept as
// files: a daemon of a later release must resume each (a mid-reboot
// update, a health gate's rollback before its reboot came back or kept the
// previous config, an update replacing an unfinished one, one holding a
// cordon its step did not record). A change of the format bumps Version
// and adds a one-way migration that this test then holds to these files.
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
	if r.Version != Version || r.CordonInherited {
		t.Errorf("replacing.json: version %d, cordon inherited %v", r.Version, r.CordonInherited)
	}
	// Version 2: the health gate's "held" is read as Kept.
	if r = load("kept.json"); !r.RolledBack() || !r.Health.Done(RollbackCheck) {
		t.Errorf("kept.json read as %+v", r.Health)
	}
	// Version 2: a cordon of this daemon that no cordon step recorded and
	// no give-back lifts is kept, as version 1 kept it: the update that
	// replaced one after its write, and one cut off by a crash (which
	// version 1 could not tell apart).
	for _, name := range []string{"inherited-cordon.json", "cordon-unrecorded.json"} {
		if r = load(name); !r.CordonedByUs || !r.CordonInherited || r.Done(StepCordon) {
			t.Errorf("%s read as %+v", name, r)
		}
	}
	if r = load("rebooting.json"); r.CordonInherited {
		t.Error("rebooting.json: a recorded cordon read as inherited")
	}
}

// The migrated record is saved as version 2, "kept" and all, and reads
// back the same.
func TestMigratedRecordSavesAsVersion2(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "v1", "kept.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if s := string(saved); !strings.Contains(s, `"version": 2`) || !strings.Contains(s, `"kept": true`) ||
		strings.Contains(s, `"held"`) {
		t.Errorf("migrated record saved as\n%s", s)
	}
	again, err := Unmarshal(saved)
	if err != nil || !again.RolledBack() {
		t.Errorf("saved record reads back as %+v, %v", again, err)
	}
}
