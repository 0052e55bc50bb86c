package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A bad state file is moved aside under a free name, readable afterwards;
// only the newest few copies are kept.
func TestMoveStateAside(t *testing.T) {
	node, f := newNode(t)
	state := filepath.Join(node, "var/lib/nodeconfd")
	if _, err := f.MoveStateAside("progress.json", "20261201T120000Z", 3); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	stamps := []string{"20261201T120000Z", "20261201T120000Z", "20261201T120001Z", "20261201T120002Z", "20261201T120000Z"}
	var got []string
	for i, s := range stamps {
		if err := f.WriteState("progress.json", []byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
		aside, err := f.MoveStateAside("progress.json", s, 3)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, aside)
		if data, err := f.ReadState(aside); err != nil || string(data) != string(rune('a'+i)) {
			t.Errorf("%s: %q, %v", aside, data, err)
		}
		if _, err := f.ReadState("progress.json"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("progress.json still there: %v", err)
		}
	}
	want := []string{"progress.json.corrupt-20261201T120000Z", "progress.json.corrupt-20261201T120000Z-1",
		"progress.json.corrupt-20261201T120001Z", "progress.json.corrupt-20261201T120002Z",
		"progress.json.corrupt-20261201T120000Z"} // a free name again: the first was pruned
	if !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
	entries, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	// The copy made last (an old stamp: a clock set back) and the two
	// newest others.
	wantLeft := []string{"progress.json.corrupt-20261201T120000Z", "progress.json.corrupt-20261201T120001Z",
		"progress.json.corrupt-20261201T120002Z"}
	if !slices.Equal(left, wantLeft) {
		t.Errorf("state folder %q, want %q", left, wantLeft)
	}
	for _, bad := range []string{"", "a/b", "x.y"} {
		if err := f.WriteState("p", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := f.MoveStateAside("p", bad, 3); err == nil {
			t.Errorf("stamp %q accepted", bad)
		}
	}
	if _, err := f.MoveStateAside("txn", "20261201T120000Z", 3); err == nil {
		t.Error("moved the journal folder aside")
	}
}
