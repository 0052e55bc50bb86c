package hostfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// A basename of 255 bytes (NAME_MAX) is written, backed up, checked and
// rolled back like any other: the temporary names never overflow.
func TestNameMax(t *testing.T) {
	node, f := newNode(t)
	long := strings.Repeat("n", 255)
	put(t, node, "etc/long/"+long, "original", 0o640) // backed up on the first write
	dropin := strings.Repeat("d", 250) + ".conf"
	unitName := strings.Repeat("u", 245) + ".service" // its drop-in folder: 255 bytes
	contents := "[Unit]\n"
	unit := plan.Unit{Name: unitName, Contents: &contents, Dropins: map[string]string{dropin: "[Service]\n"}}
	files := []plan.File{
		{Path: "/etc/long/" + long, Contents: []byte("ours"), Mode: 0o600},
		{Path: "/etc/long/" + strings.Repeat("m", 255), Contents: []byte("new"), Mode: 0o644},
	}
	// Rollback leaves the folders it made: make them first.
	mkdir(t, node, "etc/systemd/system/"+unitName+".d", 0o755, 0)
	before := tree(t, node, "var/lib/nodeconfd")
	if err := f.Preflight(plan.Config{}, plan.Config{}, plan.Diff{ChangedFiles: files, ChangedUnits: []plan.Unit{unit}}); err != nil {
		t.Fatal(err)
	}
	rollBackThenCommit(t, f, "long", func(tx *Txn) error {
		if err := tx.WriteFiles(files); err != nil {
			return err
		}
		return tx.WriteUnit(unit)
	}, func() {
		for _, file := range files {
			if err := f.CheckFile(file); err != nil {
				t.Error(err)
			}
		}
		if err := f.CheckUnit(unit); err != nil {
			t.Error(err)
		}
	}, func() { assertSame(t, before, tree(t, node, "var/lib/nodeconfd")) })
	if got := stateOf(t, filepath.Join(node, "var/lib/nodeconfd/orig/etc/long", long)); got.Data != "original" {
		t.Errorf("backup %+v", got)
	}
	if err := f.RemoveFile(files[0].Path); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, filepath.Join(node, "etc/long", long)); got.Data != "original" || got.Mode != 0o640 {
		t.Errorf("restored %+v", got)
	}
	for _, dir := range []string{"etc/long", "etc/systemd/system", "etc/systemd/system/" + unitName + ".d"} {
		entries, err := os.ReadDir(filepath.Join(node, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), tempSuffix) {
				t.Errorf("temporary file %s/%s left", dir, e.Name())
			}
		}
	}
}

// A unit whose name is 255 bytes has no room for a drop-in folder (plan
// refuses drop-ins for it): it is written, checked, rolled back and
// removed without the folder, whose name Linux would refuse.
func TestNameMaxUnitWithoutDropins(t *testing.T) {
	node, f := newNode(t)
	contents := "[Unit]\n"
	unit := plan.Unit{Name: strings.Repeat("n", 247) + ".service", Contents: &contents}
	if len(unit.Name) != 255 {
		t.Fatalf("unit name is %d bytes", len(unit.Name))
	}
	unitFile := filepath.Join(node, "etc/systemd/system", unit.Name)
	rollBackThenCommit(t, f, "long-unit", func(tx *Txn) error { return tx.WriteUnit(unit) }, func() {
		if err := f.CheckUnit(unit); err != nil {
			t.Error(err)
		}
	}, func() {
		if _, err := os.Lstat(unitFile); !os.IsNotExist(err) {
			t.Errorf("unit file after the rollback: %v", err)
		}
	})
	tx, err := f.BeginTxn("long-unit-gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.RemoveUnit(unit); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(unitFile); !os.IsNotExist(err) {
		t.Errorf("unit file after its removal: %v", err)
	}
}

// rollBackThenCommit runs write in a transaction id twice: rolled back
// (then rolledBack checks the node), then committed; check runs after each
// write.
func rollBackThenCommit(t *testing.T, f *FS, id string, write func(*Txn) error, check, rolledBack func()) {
	t.Helper()
	for _, commit := range []bool{false, true} {
		tx, err := f.BeginTxn(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := write(tx); err != nil {
			t.Fatal(err)
		}
		check()
		if commit {
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		rolledBack()
	}
}
