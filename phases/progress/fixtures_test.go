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
	if r.CordonOwn || r.Replaced.CordonOwn {
		t.Error("replacing.json: a cordon of the release before read as the update's own (given back)")
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

// additive are the paths written since the release before (acc99e2),
// each with why that release may ignore it safely.
var additive = map[string]string{
	"cordonOwn bool":                    "unset, a cordon its step did not record is kept through the waits, as that release keeps every one",
	"replaced.cordonOwn bool":           "unset, that release's give-back lifts the replaced update's cordon, as it always did",
	"owed.configs[] string":             owedIgnored,
	"owed.action.reboot bool":           owedIgnored,
	"owed.action.actions[].type string": owedIgnored,
	"owed.action.actions[].unit string": owedIgnored,
	"owed.action.drain bool":            owedIgnored,
	"owed.action.drainReason string":    owedIgnored,
	"owed.bootID string":                owedIgnored,
	"writeBootID string":                owedIgnored,
	"owed.bootStart string":             owedIgnored,
	"writeBootStart string":             owedIgnored,
	"rebootFromBootStart string":        bootStartIgnored,
	"health.rebootFromBootStart string": bootStartIgnored,
}

// bootStartIgnored is why the release before may ignore a boot's start: it
// compares the boot ID beside it, written as it writes it.
const bootStartIgnored = "that release compares the boot ID beside it, which this one writes as that release does"

// owedIgnored is why the release before may ignore the owed post action: it
// runs the replacing update's own, as it always did (a file of the replaced
// update that takes effect at boot waits for the next one).
const owedIgnored = "that release runs only the replacing update's own post action, as it always did"

// A record with every field set is written with the paths, and the kinds of
// value, that the release before reads (testdata/v1/record-paths.txt: this
// walk run on acc99e2's types), each still written, and new ones only when
// additive says why that release may ignore them; at the version it reads.
// A rename, a move, a new type or a removal fails here: the release before
// would misread the record, or refuse it, after a DaemonSet rollback (a
// node the health gate kept on its previous config would take the failed
// config again).
func TestRecordStaysReadableByTheReleaseBefore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "v1", "record-paths.txt"))
	if err != nil {
		t.Fatal(err)
	}
	before := strings.Split(strings.TrimSpace(string(data)), "\n")
	var r Record
	fill(reflect.ValueOf(&r).Elem())
	now := recordPaths(t, &r)
	for _, p := range now {
		if !slices.Contains(before, p) && additive[p] == "" {
			t.Errorf("the record writes %q, which the release before does not read so: keep the name and kind, or "+
				"add it to additive with why that release may ignore it (else bump Version, and lose the rollback)", p)
		}
	}
	for _, p := range before {
		if !slices.Contains(now, p) {
			t.Errorf("the record no longer writes %q, which the release before reads", p)
		}
	}
	if Version != 1 {
		t.Errorf("Version %d: the release before reads only version 1", Version)
	}
}

// fill sets every field of v, recursively, to a value that is not zero, so
// that every field of the record is written.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(1, 0).UTC()))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	}
}

// recordPaths are the JSON paths of a record with every field set, each
// with the kind of its value ("steps[].name string").
func recordPaths(t *testing.T, r *Record) []string {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(strings.TrimPrefix(path+"."+k, "."), e)
			}
		case []any:
			for _, e := range v {
				walk(path+"[]", e)
			}
		case string:
			out = append(out, path+" string")
		case bool:
			out = append(out, path+" bool")
		case float64:
			out = append(out, path+" number")
		}
	}
	walk("", tree)
	slices.Sort(out)
	return slices.Compact(out)
}
