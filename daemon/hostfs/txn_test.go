package hostfs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// prepareNode sets up paths in every bookkeeping state:
// a: an original the daemon never touched; b: absent;
// c: managed over an original (backup); d: managed, created by the daemon;
// e: an original the daemon wrote and then restored.
func prepareNode(t *testing.T) (string, *FS) {
	node, f := newNode(t)
	put(t, node, "etc/a", "a-orig", 0o600)
	if err := os.Chown(filepath.Join(node, "etc/a"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	put(t, node, "etc/c", "c-orig", 0o644)
	put(t, node, "etc/e", "e-orig", 0o640)
	for _, p := range []string{"/etc/c", "/etc/d", "/etc/e"} {
		if err := f.WriteFile(plan.File{Path: p, Contents: []byte("ours"), Mode: 0o4755}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.RemoveFile("/etc/e"); err != nil {
		t.Fatal(err)
	}
	return node, f
}

// update changes every prepared path in a transaction.
func update(t *testing.T, tx *Txn) {
	t.Helper()
	steps := []func() error{
		func() error { return tx.WriteFile(plan.File{Path: "/etc/a", Contents: []byte("new a"), Mode: 0o644}) },
		func() error { return tx.WriteFile(plan.File{Path: "/etc/a", Contents: []byte("newer a"), Mode: 0o600}) },
		func() error {
			return tx.WriteFiles([]plan.File{
				{Path: "/etc/sub/b", Contents: []byte("new b"), Mode: 0o644},
				{Path: "/etc/e", Contents: []byte("new e"), Mode: 0o644},
			})
		},
		func() error { return tx.RemoveFile("/etc/c") },
		func() error { return tx.RemoveFile("/etc/d") },
		func() error { return tx.WriteFile(plan.File{Path: "/etc/d", Contents: []byte("d again"), Mode: 0o644}) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

func TestTxnRollbackRestoresExactState(t *testing.T) {
	node, f := prepareNode(t)
	before := tree(t, node, "var/lib/nodeconfd/txn")
	tx, err := f.BeginTxn("update-1")
	if err != nil {
		t.Fatal(err)
	}
	update(t, tx)
	if ids, _ := f.PendingTxns(); !slices.Equal(ids, []string{"update-1"}) {
		t.Fatalf("pending = %v", ids)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	after := tree(t, node, "var/lib/nodeconfd/txn")
	for p, want := range before {
		if got := after[p]; got != want {
			t.Errorf("%s: %+v, want %+v", p, got, want)
		}
	}
	for p, got := range after {
		if _, ok := before[p]; !ok && got.Kind != "dir" { // new directories stay
			t.Errorf("%s left: %+v", p, got)
		}
	}
	if ids, _ := f.PendingTxns(); len(ids) != 0 {
		t.Fatalf("pending after rollback = %v", ids)
	}
}

func TestTxnReopenKeepsFirstState(t *testing.T) {
	node, f := prepareNode(t)
	before := tree(t, node, "var/lib/nodeconfd/txn")
	tx, err := f.BeginTxn("u2")
	if err != nil {
		t.Fatal(err)
	}
	update(t, tx)
	tx.Close() // crash
	// A torn append from the crash must be dropped.
	journal := filepath.Join(node, "var/lib/nodeconfd/txn/u2/journal")
	fh, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(`{"path":"/etc/torn","file":{"ki`)
	fh.Close()

	ids, err := f.PendingTxns()
	if err != nil || !slices.Equal(ids, []string{"u2"}) {
		t.Fatalf("pending = %v, %v", ids, err)
	}
	tx, err = f.BeginTxn("u2")
	if err != nil {
		t.Fatal(err)
	}
	update(t, tx) // the re-run sees the new state but must not record it
	data, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 6 || strings.Contains(string(data), "torn") {
		t.Fatalf("journal has %d entries (torn kept: %v), want the 6 first ones (5 files, /etc/sub)", n, strings.Contains(string(data), "torn"))
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	after := tree(t, node, "var/lib/nodeconfd/txn")
	for p, want := range before {
		if got := after[p]; got != want {
			t.Errorf("%s: %+v, want %+v", p, got, want)
		}
	}
}

func TestTxnCommit(t *testing.T) {
	node, f := prepareNode(t)
	tx, err := f.BeginTxn("u3")
	if err != nil {
		t.Fatal(err)
	}
	update(t, tx)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := tx.WriteFile(plan.File{Path: "/etc/x"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("write after commit: %v", err)
	}
	if ids, _ := f.PendingTxns(); len(ids) != 0 {
		t.Fatalf("pending after commit = %v", ids)
	}
	want := map[string]string{"etc/a": "newer a", "etc/sub/b": "new b", "etc/c": "c-orig", "etc/d": "d again", "etc/e": "new e"}
	for p, data := range want {
		if got := stateOf(t, filepath.Join(node, p)); got.Data != data {
			t.Errorf("%s = %+v, want %q", p, got, data)
		}
	}
	// /etc/e is managed again, with its original saved anew.
	if got := stateOf(t, filepath.Join(node, "var/lib/nodeconfd/orig/etc/e")); got.Data != "e-orig" {
		t.Errorf("backup of /etc/e = %+v", got)
	}
	if got := stateOf(t, filepath.Join(node, "var/lib/nodeconfd/restored/etc/e")); got.Kind != "absent" {
		t.Errorf("restored marker of /etc/e left: %+v", got)
	}
}

func TestBeginTxnInvalidID(t *testing.T) {
	_, f := newNode(t)
	for _, id := range []string{"", "a/b", "..", ".x"} {
		if _, err := f.BeginTxn(id); err == nil {
			t.Errorf("BeginTxn(%q) succeeded", id)
		}
	}
}
