package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// A read-only FS makes no state folder and refuses every change.
func TestOpenReadOnly(t *testing.T) {
	root := t.TempDir()
	f, err := OpenReadOnly(root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := os.Stat(filepath.Join(root, "var/lib/nodeconfd")); !os.IsNotExist(err) {
		t.Fatalf("state folder: %v, want none", err)
	}
	for what, err := range map[string]error{
		"WriteState":  f.WriteState("x", []byte("x")),
		"RemoveState": f.RemoveState("x"),
		"WriteFile":   f.WriteFile(plan.File{Path: "/etc/x", Contents: []byte("x"), Mode: 0o644}),
		"RemoveFile":  f.RemoveFile("/etc/x"),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", what, err)
		}
	}
	if _, err := f.BeginTxn("t"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("BeginTxn: %v, want ErrReadOnly", err)
	}
	if _, err := f.MoveStateAside("x", "1", 1); !errors.Is(err, ErrReadOnly) {
		t.Errorf("MoveStateAside: %v, want ErrReadOnly", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("the root has %d entries, want none", len(entries))
	}
}
