package hostfs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Issue 27: an original is copied once, into its backup, not into the
// journal's data as well; a rollback at any point still puts it back.
func TestTxnOriginalCopiedOnce(t *testing.T) {
	node, f := newNode(t)
	orig := strings.Repeat("original ", 1<<17) // about 1 MiB
	put(t, node, "etc/big", orig, 0o640)
	if err := os.Chown(filepath.Join(node, "etc/big"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	want := stateOf(t, filepath.Join(node, "etc/big"))
	tx, err := f.BeginTxn("once")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.WriteFiles([]plan.File{{Path: "/etc/big", Contents: []byte("new"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(node, "var/lib/nodeconfd/txn/once/data")); err != nil || fi.Size() != 0 {
		t.Fatalf("journal data: %v, %v; want empty", fi, err)
	}
	if got := stateOf(t, filepath.Join(node, "var/lib/nodeconfd/orig/etc/big")); got != want {
		t.Fatalf("backup %+v, want %+v", got.Kind, want.Kind)
	}
	// A second write in the transaction changes nothing of that.
	if err := tx.WriteFiles([]plan.File{{Path: "/etc/big", Contents: []byte("newer"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	// A crash in the rollback after the file was put back and its backup
	// dropped, before the journal was: the re-run leaves it so.
	put(t, node, "etc/big", orig, 0o640)
	if err := os.Chown(filepath.Join(node, "etc/big"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(node, "var/lib/nodeconfd/orig/etc/big")); err != nil {
		t.Fatal(err)
	}
	tx.Close()
	tx, err = f.BeginTxn("once")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, filepath.Join(node, "etc/big")); got != want {
		t.Errorf("after the rollback: %+v", got)
	}
	// A whole rollback, and one of a write refused after its journal entry
	// (before its backup): both leave the original and no backup.
	for _, files := range [][]plan.File{
		{{Path: "/etc/big", Contents: []byte("new"), Mode: 0o644}},
		{{Path: "/etc/big", Contents: []byte("new"), Mode: 0o644}, {Path: "/etc/adir", Contents: []byte("x"), Mode: 0o644}},
	} {
		mkdir(t, node, "etc/adir", 0o755, 0)
		tx, err := f.BeginTxn("again")
		if err != nil {
			t.Fatal(err)
		}
		werr := tx.WriteFiles(files)
		if (werr != nil) != (len(files) == 2) {
			t.Fatalf("WriteFiles of %d files: %v", len(files), werr)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, filepath.Join(node, "etc/big")); got != want {
			t.Errorf("%d files: after the rollback: %+v", len(files), got.Kind)
		}
		if got := stateOf(t, filepath.Join(node, "var/lib/nodeconfd/orig/etc/big")); got.Kind != "absent" {
			t.Errorf("%d files: backup left: %+v", len(files), got.Kind)
		}
	}
}

// Issue 27: a rollback removes the folders the transaction made, deepest
// first, when empty, so a later config may put a file there; a folder
// that was there, or that holds something else by then, stays.
func TestTxnRollbackRemovesNewFolders(t *testing.T) {
	node, f := newNode(t)
	mkdir(t, node, "etc/there", 0o755, 0)
	tx, err := f.BeginTxn("dirs")
	if err != nil {
		t.Fatal(err)
	}
	files := []plan.File{
		{Path: "/etc/new/a/b/f", Contents: []byte("1"), Mode: 0o644},
		{Path: "/etc/new/a/c", Contents: []byte("2"), Mode: 0o644},
		{Path: "/etc/there/x/f", Contents: []byte("3"), Mode: 0o644},
		{Path: "/etc/other/f", Contents: []byte("4"), Mode: 0o644},
	}
	if err := tx.WriteFiles(files); err != nil {
		t.Fatal(err)
	}
	put(t, node, "etc/other/not-ours", "x", 0o644) // made meanwhile by someone else
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"etc/new", "etc/there/x", "etc/other/f"} {
		if got := stateOf(t, filepath.Join(node, p)); got.Kind != "absent" {
			t.Errorf("%s left after the rollback: %+v", p, got.Kind)
		}
	}
	for _, p := range []string{"etc/there", "etc/other/not-ours"} {
		if _, err := os.Lstat(filepath.Join(node, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	tx, err = f.BeginTxn("later")
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := tx.WriteFiles([]plan.File{{Path: "/etc/new", Contents: []byte("a file now"), Mode: 0o644}}); err != nil {
		t.Errorf("a file where the rolled-back folder was: %v", err)
	}
}

// Issue 27: the folders a committed transaction made are known to the
// health gate's rollback (CreatedDirs, saved in the progress record), which
// removes them when empty, journaled, so that its own rollback makes them
// again; a folder holding something else, or now a symlink, stays.
func TestTxnRemoveEmptyDirsAfterCommit(t *testing.T) {
	node, f := newNode(t)
	tx, err := f.BeginTxn("update")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.WriteFiles([]plan.File{
		{Path: "/etc/new/a/b/f", Contents: []byte("1"), Mode: 0o644},
		{Path: "/etc/kept/f", Contents: []byte("2"), Mode: 0o644},
		{Path: "/etc/link/f", Contents: []byte("3"), Mode: 0o644},
	}); err != nil {
		t.Fatal(err)
	}
	created := tx.CreatedDirs()
	want := []string{"/etc/new", "/etc/new/a", "/etc/new/a/b", "/etc/kept", "/etc/link"}
	if !slices.Equal(created, want) {
		t.Fatalf("CreatedDirs = %v, want %v", created, want)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	put(t, node, "etc/kept/theirs", "x", 0o644)
	mkdir(t, node, "elsewhere", 0o755, 0)
	undo := func(tx *Txn) {
		for _, p := range []string{"/etc/new/a/b/f", "/etc/kept/f", "/etc/link/f"} {
			if err := tx.RemoveFile(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	rb, err := f.BeginTxn("rollback")
	if err != nil {
		t.Fatal(err)
	}
	undo(rb)
	if err := os.Remove(filepath.Join(node, "etc/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/elsewhere", filepath.Join(node, "etc/link")); err != nil {
		t.Fatal(err)
	}
	n, err := rb.RemoveEmptyDirs(created)
	if err != nil || n != 3 {
		t.Fatalf("RemoveEmptyDirs = %d, %v; want 3 (etc/new and below)", n, err)
	}
	if _, err := os.Lstat(filepath.Join(node, "etc/new")); !os.IsNotExist(err) {
		t.Errorf("etc/new: %v, want gone", err)
	}
	for _, p := range []string{"etc/kept/theirs", "etc/link", "elsewhere"} {
		if _, err := os.Lstat(filepath.Join(node, p)); err != nil {
			t.Errorf("%s: %v, want left", p, err)
		}
	}
	// The rollback's own rollback (it failed later) makes them again.
	if err := rb.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, filepath.Join(node, "etc/new/a/b/f")); got.Kind != "file" {
		t.Errorf("etc/new/a/b/f after undoing the rollback: %+v", got.Kind)
	}
}
