package hostfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// A rollback after a crash mid-write also removes the temporary files the
// cut-short writes left beside the journaled paths.
func TestTxnRollbackRemovesTempFiles(t *testing.T) {
	node, f := newNode(t)
	tx, err := f.BeginTxn("tmp-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.WriteFiles([]plan.File{{Path: "/etc/t/a", Contents: []byte("a"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	put(t, node, "etc/t/"+tempName("a"), "half", 0o600) // a write cut short
	tx.Close()
	if tx, err = f.BeginTxn("tmp-1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(node, "etc/t"))
	if err != nil && !os.IsNotExist(err) { // the folder the transaction made goes too
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left after the rollback: %s", e.Name())
	}
}
