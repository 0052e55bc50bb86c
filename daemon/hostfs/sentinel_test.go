package hostfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The sentinel is read and removed through the root: a link out of it is
// not followed, a sentinel written after the reboot was asked for stays.
func TestSentinel(t *testing.T) {
	root, f := newNode(t)
	if _, there, err := f.Sentinel("/run/reboot-required"); there || err != nil {
		t.Fatalf("missing sentinel: %v %v", there, err)
	}
	p := filepath.Join(root, "run/reboot-required")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("*** System restart required ***\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	written := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, written, written); err != nil {
		t.Fatal(err)
	}
	at, there, err := f.Sentinel("/run/reboot-required")
	if !there || err != nil || at.Sub(written).Abs() > time.Second {
		t.Fatalf("sentinel: %v %v %v", at, there, err)
	}
	// Asked before the file was written: a new request, kept.
	if err := f.RemoveSentinel("/run/reboot-required", written.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("a newer sentinel was removed: %v", err)
	}
	if err := f.RemoveSentinel("/run/reboot-required", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("the answered sentinel is still there: %v", err)
	}

	// A folder of the path that links out of the root is not followed.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "reboot-required"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	// An absolute link leads inside the root, as in a chroot: the file outside is not there.
	if _, there, _ := f.Sentinel("/escape/reboot-required"); there {
		t.Errorf("a sentinel outside the root was read")
	}
	_ = f.RemoveSentinel("/escape/reboot-required", time.Now())
	if _, err := os.Stat(filepath.Join(outside, "reboot-required")); err != nil {
		t.Errorf("the file outside the root is gone: %v", err)
	}
	if _, _, err := f.Sentinel("relative"); err == nil {
		t.Error("a relative path was read")
	}
}

// The sentinel's folders get the checks a write's get: a folder a non-root
// user owns or may write to (who could swap a folder for a symlink between
// the check and the removal, or write the sentinel to ask for a reboot) is
// refused, and in a sticky folder everyone may write to only a sentinel
// root owns counts. Nothing is removed where a check fails.
func TestSentinelFolderChecks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to another user")
	}
	root, f := newNode(t)
	mk := func(dir string, mode os.FileMode, uid int, sentinelUID int) string {
		t.Helper()
		d := filepath.Join(root, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "reboot-required")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, sentinelUID, sentinelUID); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, dir string
		mode      os.FileMode
		uid, file int
		want      string // "" for a sentinel that counts
	}{
		{"RootFolder", "run/ok", 0o755, 0, 0, ""},
		{"UserFolder", "home/alice/run", 0o755, 1000, 0, "owned by"},
		{"WorldWritableFolder", "var/shared", 0o777, 0, 0, "writ"},
		{"StickyFolderUserFile", "tmp1", 0o777 | os.ModeSticky, 0, 1000, "not root's"},
		{"StickyFolderRootFile", "tmp2", 0o777 | os.ModeSticky, 0, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mk(c.dir, c.mode, c.uid, c.file)
			node := "/" + c.dir + "/reboot-required"
			_, there, err := f.Sentinel(node)
			rmErr := f.RemoveSentinel(node, time.Now())
			_, statErr := os.Lstat(p)
			if c.want == "" {
				if !there || err != nil || rmErr != nil || !os.IsNotExist(statErr) {
					t.Errorf("there %v, %v; removal %v, after it %v", there, err, rmErr, statErr)
				}
				return
			}
			if there || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("there %v, %v; want refused with %q", there, err, c.want)
			}
			if rmErr == nil || statErr != nil {
				t.Errorf("removal %v, the file after it %v; want refused and kept", rmErr, statErr)
			}
		})
	}
}
