package progress

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Records as today's release (record version 1) writes them, kept as
// files: a daemon of a later release must resume each (a mid-reboot
// update, a health gate's rollback before its reboot came back or kept the
// previous config, an update replacing an unfinished one, one holding a
// cordon its step did not record). Fields are only added (see
// TestRecordStaysReadableByTheReleaseBefore); a change that cannot be
// made so would bump Version with a one-way migration held to these files.
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
	if r.CordonOwn {
		t.Error("replacing.json: the replaced update's cordon read as this update's own")
	}
	if r = load("kept.json"); !r.RolledBack() || !r.Health.Done(RollbackCheck) {
		t.Errorf("kept.json read as %+v", r.Health)
	}
	// A cordon of this daemon that no cordon step recorded as done, in a
	// record older than CordonOwn, is kept (as the release that wrote it
	// kept it): the update that replaced one after its write, and one cut
	// off by a crash right after its cordon request, which that release
	// could not tell apart.
	for _, name := range []string{"inherited-cordon.json", "cordon-unrecorded.json"} {
		if r = load(name); !r.CordonedByUs || r.CordonOwn || r.Done(StepCordon) {
			t.Errorf("%s read as %+v", name, r)
		}
	}
}

// knownBefore are the JSON names of the record as the release before
// (acc99e2) reads them. A record this release writes must keep their
// meaning, so that a DaemonSet rolled back to it mid-update resumes, and
// a node the health gate kept on its previous config stays there.
var knownBefore = strings.Fields(`action actions cordoned cordonedByUs createdDirs current desired drain drainReason
	earlierKernelArgs extensionsChanged failed fromKernelArgs health held imageChanged kernelArgsAdded
	kernelArgsRemoved kernelTypeChanged message name os reason reboot rebootFromBootID rebootRequest
	rebootRequestedAt replaced retry skipped startedAt steps type unit version writeStarted`)

// additive are the names added since, each with why the release before may
// ignore it safely.
var additive = map[string]string{
	"cordonOwn": "unset, a cordon its step did not record is kept through the waits, as that release keeps every one",
}

// A record with every field set is written with the names the release
// before knows, or with additive ones, and at the version it reads.
func TestRecordStaysReadableByTheReleaseBefore(t *testing.T) {
	r := New("a", "b")
	r.Steps = []Step{{Name: StepDetect, Skipped: true, Reason: "r", Message: "m"}}
	r.CordonedByUs, r.CordonOwn, r.WriteStarted = true, true, true
	r.CreatedDirs, r.EarlierKernelArgs = []string{"/etc/x"}, []string{"k=1"}
	r.RebootFromBootID, r.RebootRequestedAt, r.RebootRequest = "boot", time.Unix(1, 0), "why"
	r.OS = &OSPlan{FromKernelArgs: []string{"a"}, ImageChanged: true, KernelArgsRemoved: []string{"b"},
		KernelArgsAdded: []string{"c"}, ExtensionsChanged: true, KernelTypeChanged: true}
	r.Action = &ActionPlan{Reboot: true, Actions: []Action{{Type: "Restart", Unit: "u"}}, Drain: true, DrainReason: "d"}
	r.Health = &Health{Retry: "1", StartedAt: time.Unix(1, 0), Failed: "f", Steps: r.Steps,
		RebootFromBootID: "b", RebootRequestedAt: time.Unix(1, 0), Kept: true}
	r.Replaced = &Replaced{Desired: "c", Cordoned: true, WriteStarted: true}
	everyFieldSet(t, reflect.ValueOf(*r))
	data, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		t.Fatal(err)
	}
	for _, k := range jsonNames(tree) {
		if !slices.Contains(knownBefore, k) && additive[k] == "" {
			t.Errorf("the record writes %q, which the release before does not know: keep the name, or add it to "+
				"additive with why that release may ignore it (else bump Version, and lose the rollback)", k)
		}
	}
	if Version != 1 {
		t.Errorf("Version %d: the release before reads only version 1", Version)
	}
}

// everyFieldSet fails for a zero field of v, so that a new field is set in
// the test above, and its name checked.
func everyFieldSet(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.IsZero() {
			t.Errorf("%s.%s is not set in the test", v.Type().Name(), v.Type().Field(i).Name)
			continue
		}
		for f.Kind() == reflect.Pointer || f.Kind() == reflect.Slice {
			if f.Kind() == reflect.Slice {
				f = f.Index(0)
			} else {
				f = f.Elem()
			}
		}
		if f.Kind() == reflect.Struct && f.Type() != reflect.TypeOf(time.Time{}) {
			everyFieldSet(t, f)
		}
	}
}

// jsonNames are the object keys anywhere in tree.
func jsonNames(tree any) []string {
	var names []string
	switch v := tree.(type) {
	case map[string]any:
		for k, e := range v {
			names = append(names, k)
			names = append(names, jsonNames(e)...)
		}
	case []any:
		for _, e := range v {
			names = append(names, jsonNames(e)...)
		}
	}
	return names
}
