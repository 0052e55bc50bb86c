package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `nodeconfd plan --root-mount` only reads the node: a root it previews is
// the same afterwards, entry for entry (no state folder made, no mode
// changed), whether the update would apply or be refused.
func TestPlanRootMountWritesNothing(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"etc", "var/lib"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/old"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`"storage":{"files":[{"path":"/etc/new","contents":{"source":"data:,x"}},{"path":"/etc/old","contents":{"source":"data:,y"}}]}`,
		`"storage":{"files":[{"path":"/proc/x","contents":{"source":"data:,x"}}]}`,
	} {
		before := snapshotTree(t, root)
		desired := filepath.Join(t.TempDir(), "desired.json")
		mc := fmt.Sprintf(`{"kind":"MachineConfig","metadata":{"name":"rendered-worker-1"},"spec":{"config":{"ignition":{"version":"3.4.0"},%s}}}`, body)
		if err := os.WriteFile(desired, []byte(mc), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := runPlan([]string{"--desired", desired, "--root-mount", root}, &out, &errOut)
		if code != planApplies && code != planRefused {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		if after := snapshotTree(t, root); after != before {
			t.Fatalf("plan changed the root:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	}
}

// snapshotTree lists every entry under root with its mode, size and time.
func snapshotTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %s %d %d\n", p, info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
