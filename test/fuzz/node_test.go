package fuzz

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
)

// nodeLayout is the temporary node the fuzz target writes into: account
// files with user core, core's home, the pseudo file systems as plain
// files (writing under them fails, as on a node), and a symlink that leads
// out of the root.
var nodeLayout = []struct{ rel, data string }{
	{"etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:core:/home/core:/bin/bash\n"},
	{"etc/group", "root:x:0:\ncore:x:1000:\nwheel:x:10:core\n"},
	{"etc/hostname", "fuzz\n"},
	{"etc/systemd/system/existing.service", "[Service]\nExecStart=/bin/true\n"},
	{"proc", ""}, {"sys", ""}, {"dev", ""},
}

// newNode lays out a node under a fresh temp dir, next to a folder
// "outside" that no write may reach, and opens it like the daemon does.
func newNode(t *testing.T) (dir string, f *hostfs.FS) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the write sets owners")
	}
	dir = t.TempDir()
	node := filepath.Join(dir, "node")
	for _, e := range nodeLayout {
		put(t, filepath.Join(node, e.rel), e.data)
	}
	put(t, filepath.Join(dir, "outside", "secret"), "outside\n")
	home := filepath.Join(node, "home/core")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside", filepath.Join(node, "etc/escape")); err != nil {
		t.Fatal(err)
	}
	f, err := hostfs.Open(node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return dir, f
}

func put(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// entry is the state of one non-directory path.
type entry struct {
	kind     fs.FileMode
	data     string
	mode     uint32
	uid, gid uint32
}

// snapshot returns every non-directory under dir by relative path.
func snapshot(t *testing.T, dir string) map[string]entry {
	t.Helper()
	m := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		e := entry{kind: d.Type(), mode: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid}
		switch d.Type() {
		case fs.ModeSymlink:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e.data = target
		case 0:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.data = string(data)
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// changed lists the paths whose state differs between a and b, except
// those keep says may change.
func changed(a, b map[string]entry, keep func(rel string) bool) []string {
	var out []string
	for p, e := range a {
		if f, ok := b[p]; (!ok || f != e) && !keep(p) {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok && !keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// tempFiles lists the temporary files left under dir.
func tempFiles(snap map[string]entry) []string {
	var out []string
	for p := range snap {
		if strings.HasSuffix(p, ".nodeconfd-tmp") {
			out = append(out, p)
		}
	}
	return out
}

// short is s cut for messages.
func short(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
