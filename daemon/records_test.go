package daemon

import (
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// What the daemon takes as a usable progress record, and what it says of
// one it cannot use.
func TestDecodeRecord(t *testing.T) {
	for _, tc := range []struct {
		name, data, err string
	}{
		{"ok", `{"version":2,"current":"a","desired":"b","steps":[{"name":"detect","message":"detected"}]}`, ""},
		{"version 1, migrated", `{"version":1,"current":"a","desired":"b","steps":[{"name":"detect","message":"detected"}]}`, ""},
		{"empty", ``, "unexpected end of JSON input"},
		{"truncated", `{"version":1,"current":"a","desi`, "unexpected end of JSON input"},
		{"garbage", "\x00garbage", "invalid character"},
		{"null", `null`, "has version 0"},
		{"newer version", `{"version":3,"current":"a","desired":"b"}`, "progress record has version 3, this daemon reads versions 1 and 2"},
		{"no version", `{"current":"a","desired":"b"}`, "has version 0"},
		{"no desired config", `{"version":2,"current":"a"}`, "names no desired config"},
		{"wrong type", `{"version":2,"desired":"b","steps":"all"}`, "cannot unmarshal"},
		{"wrong type in version 1", `{"version":1,"desired":"b","steps":"all"}`, "cannot unmarshal"},
	} {
		rec, err := decodeRecord([]byte(tc.data))
		if tc.err == "" {
			if err != nil || rec.Desired != "b" || !rec.Done("detect") {
				t.Errorf("%s: %+v, %v", tc.name, rec, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestLostRecordPlan(t *testing.T) {
	for _, tc := range []struct {
		current, desired string
		adopt            bool
		from             string
	}{
		// An update from a to b was under way: b again, from a (what only
		// a had is removed).
		{"a", "b", false, "a"},
		// At a, or a rolled back to: adopted if a is on the node in full,
		// else all of a written again.
		{"a", "a", true, ""},
		// A new node: as without a record.
		{"", "b", true, ""},
	} {
		adopt, from := lostRecordPlan(tc.current, tc.desired)
		if adopt != tc.adopt || from != tc.from {
			t.Errorf("lostRecordPlan(%q, %q) = %v, %q; want %v, %q", tc.current, tc.desired, adopt, from, tc.adopt, tc.from)
		}
	}
}

// An update that failed after its write (its CRI-O reload refused, say),
// replaced by a new desired config on a later pass, hands the new update
// the written config to diff from and the post action it owes; one that
// failed before its write hands over its current config and nothing owed.
func TestRecordForReplacedFailedUpdate(t *testing.T) {
	failed := func(steps ...string) *progress.Record {
		r := progress.New("a", "b")
		r.Prepare.Action = &progress.ActionPlan{Actions: []progress.Action{{Type: "Reload", Unit: "crio.service"}}}
		for _, s := range steps {
			r.MarkDone(progress.Step{Name: s})
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		old      *progress.Record
		from     string
		owedFrom []string
	}{
		{"failed at its reload", failed("detect", "prepare", "write"), "b", []string{"b"}},
		{"failed before its write", failed("detect", "prepare"), "a", nil},
	} {
		n := (&Daemon{}).recordFor(tc.old, "a", "c")
		var owed []string
		if n.Inherited.Owed != nil {
			owed = n.Inherited.Owed.Configs
		}
		if n.Current != tc.from || n.Desired != "c" || strings.Join(owed, ",") != strings.Join(tc.owedFrom, ",") {
			t.Errorf("%s: record %s -> %s owing %v, want %s -> c owing %v", tc.name, n.Current, n.Desired, owed,
				tc.from, tc.owedFrom)
		}
	}
}
