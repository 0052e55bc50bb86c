package hostfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const (
	passwd = "root:x:0:0:root:/root:/bin/bash\n" +
		"# a comment\n" +
		"core:x:1000:1000:CoreOS Admin:/var/home/core:/bin/bash\n"
	group   = "root:x:0:\ncore:x:1000:\nwheel:x:10:core\n"
	libPass = "chrony:x:994:992::/var/lib/chrony:/sbin/nologin\ncore:x:1:1::/nope:/bin/sh\n"
	libGrp  = "chrony:x:992:\n"
)

// newNode makes a fake node root (under a temp dir that also holds an
// "outside" directory) and opens it.
func newNode(t testing.TB) (string, *FS) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	dir := t.TempDir()
	node := filepath.Join(dir, "node")
	put(t, node, "etc/passwd", passwd, 0o644)
	put(t, node, "etc/group", group, 0o644)
	put(t, node, "usr/lib/passwd", libPass, 0o644)
	put(t, node, "usr/lib/group", libGrp, 0o644)
	put(t, dir, "outside/secret", "outside", 0o600)
	f, err := Open(node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return node, f
}

// put writes a host file under dir with plain os calls.
func put(t testing.TB, dir, rel, data string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// fileState describes one host path for comparisons.
type fileState struct {
	Kind     string
	Data     string
	Mode     uint32
	UID, GID uint32
}

func stateOf(t testing.TB, p string) fileState {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		if err == syscall.ENOENT {
			return fileState{Kind: "absent"}
		}
		t.Fatal(err)
	}
	s := fileState{Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatal(err)
		}
		s.Kind, s.Data, s.Mode = "symlink", target, 0
	case syscall.S_IFDIR:
		s.Kind = "dir"
	default:
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s.Kind, s.Data = "file", string(data)
	}
	return s
}

// tree returns the state of every path under root, except skip.
func tree(t testing.TB, root string, skip string) map[string]fileState {
	t.Helper()
	m := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		if skip != "" && (r == skip || strings.HasPrefix(r, skip+"/")) {
			return fs.SkipDir
		}
		m[r] = stateOf(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func intp(i int) *int { return &i }
