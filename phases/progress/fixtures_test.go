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
	if !r.Done(StepWrite) || r.Done(StepReboot) || r.Reboot.FromBootID == "" || !r.Cordon.ByUs || !r.Write.Started ||
		r.Prepare.Action == nil || !r.Prepare.Action.Reboot || r.Reboot.RequestedAt.IsZero() {
		t.Errorf("rebooting.json read as %+v", r)
	}
	if st := r.Step(StepFailedElsewhere); st == nil || !st.Skipped {
		t.Errorf("rebooting.json: the skipped step reads %+v", st)
	}
	r = load("health-rollback.json")
	h := r.Health
	if h == nil || h.Failed == "" || h.Kept || !h.Done(RollbackWrite) || h.Done(RollbackPost) || h.Reboot.FromBootID == "" {
		t.Errorf("health-rollback.json read as %+v", h)
	}
	r = load("replacing.json")
	if r.Inherited.Replaced == nil || !r.Inherited.Replaced.Cordoned || !r.Inherited.Replaced.WriteStarted || len(r.Inherited.EarlierKernelArgs) != 1 || len(r.Steps) != 0 {
		t.Errorf("replacing.json read as %+v", r)
	}
	if r.Cordon.Own || r.Inherited.Replaced.CordonOwn {
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
		if r = load(name); !r.Cordon.ByUs || r.Cordon.Own || r.Done(StepCordon) {
			t.Errorf("%s read as %+v", name, r)
		}
	}
}

// additive are the paths written since this release (record version 2),
// each with why the release that reads version 2 first may ignore it.
var additive = map[string]string{}

// A record with every field set is written with the paths, and the kinds of
// value, that this release reads (testdata/v2/record-paths.txt), each still
// written, and new ones only when additive says why this release may ignore
// them; at the version it reads. A rename, a move, a new type or a removal
// fails here: this release would misread the record, or refuse it, after a
// DaemonSet rollback from a later one (a node the health gate kept on its
// previous config would take the failed config again). Version 1 records
// are not written any more: they are migrated as they are read
// (TestRecordsOfVersion1Resume).
func TestRecordStaysReadableByTheReleaseBefore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "v2", "record-paths.txt"))
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
	if Version != 2 {
		t.Errorf("Version %d: the release before reads only version 2", Version)
	}
}

// A record of version 1 migrated is written as version 2 and reads back
// the same: the migration is one way, and happens once.
func TestVersion1MigratesOnce(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "v1", "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("fixtures: %v %v", names, err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Unmarshal(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Unmarshal(out)
		if err != nil || again.Version != 2 || !reflect.DeepEqual(again, r) {
			t.Errorf("%s: written as %s, read back as %+v (%v)", name, out, again, err)
		}
	}
}

// A record of version 1 with every field set loses nothing in the
// migration: each v1 field lands in a v2 field (a field added to v1's
// types, or forgotten in migrateV1, fails here).
func TestVersion1MigrationKeepsEveryField(t *testing.T) {
	var o recordV1
	fill(reflect.ValueOf(&o).Elem())
	o.Version = 1
	data, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	var zero []string
	walkZero(reflect.ValueOf(r).Elem(), "", &zero)
	if len(zero) > 0 {
		t.Errorf("fields left empty by the migration of a full v1 record: %v", zero)
	}
}

// walkZero lists the paths of v's fields that are zero.
func walkZero(v reflect.Value, path string, out *[]string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			*out = append(*out, path)
			return
		}
		walkZero(v.Elem(), path, out)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if v.Interface().(time.Time).IsZero() {
				*out = append(*out, path)
			}
			return
		}
		for i := range v.NumField() {
			walkZero(v.Field(i), path+"."+v.Type().Field(i).Name, out)
		}
	default:
		if v.IsZero() {
			*out = append(*out, path)
		}
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
