package hostfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// errKilled stands for the SIGKILL of a fault point.
type errKilled struct{}

// killAt returns a hook that panics with errKilled at point.
func killAt(point string) func(string) {
	return func(p string) {
		if p == point {
			panic(errKilled{})
		}
	}
}

// crash runs fn, which a fault point ends.
func crash(t *testing.T, fn func() error) {
	t.Helper()
	defer func() {
		if r := recover(); r != (errKilled{}) {
			t.Fatalf("recovered %v, want a kill at the fault point", r)
		}
	}()
	err := fn()
	t.Fatalf("the fault point was not reached (err %v)", err)
}

// A kill half-way through a journal append leaves a torn entry; the
// re-opened transaction cuts it off, and a rollback leaves the node as it was.
func TestTornJournalAppend(t *testing.T) {
	node, f := newNode(t)
	f.Fault = killAt("journal-append")
	tx, err := f.BeginTxn("u1")
	if err != nil {
		t.Fatal(err)
	}
	files := []plan.File{{Path: "/etc/x/a", Contents: []byte("a"), Mode: 0o644}, {Path: "/etc/x/b", Contents: []byte("b"), Mode: 0o644}}
	crash(t, func() error { return tx.WriteFiles(files) })
	tx.Close()
	data, err := os.ReadFile(filepath.Join(node, txnRel, "u1/journal"))
	if err != nil || len(data) == 0 || data[len(data)-1] == '\n' {
		t.Fatalf("journal after the kill = %q, %v; want a torn entry", data, err)
	}
	f.Fault = nil
	tx, err = f.BeginTxn("u1")
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(node, txnRel, "u1/journal")); len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("re-opened journal = %q, want its torn entry cut off", data)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(node, "etc/x/a")); err == nil {
		t.Error("/etc/x/a exists after the rollback")
	}
}

// A kill in the middle of a batch write leaves temporary files; the
// rollback of the re-opened transaction removes them with the files.
func TestRollbackRemovesTempLeftovers(t *testing.T) {
	node, f := newNode(t)
	f.Fault = killAt("journal-synced")
	tx, err := f.BeginTxn("u1")
	if err != nil {
		t.Fatal(err)
	}
	crash(t, func() error {
		return tx.WriteFiles([]plan.File{{Path: "/etc/y/new", Contents: []byte("n"), Mode: 0o644}})
	})
	tx.Close()
	// What a kill between the temp file's creation and its rename leaves.
	put(t, node, "etc/y/.new.nodeconfd-tmp", "half", 0o600)
	f.Fault = nil
	tx, err = f.BeginTxn("u1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(node, "etc/y"))
	if err != nil && !os.IsNotExist(err) { // the folder the transaction made goes too
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left in /etc/y after the rollback: %s", e.Name())
	}
}
