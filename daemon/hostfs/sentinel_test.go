package hostfs

import (
	"os"
	"path/filepath"
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
	if _, there, err := f.Sentinel("/escape/reboot-required"); there || err == nil {
		t.Errorf("a sentinel outside the root was read: %v %v", there, err)
	}
	if err := f.RemoveSentinel("/escape/reboot-required", time.Now()); err == nil {
		t.Error("a sentinel outside the root was removed")
	}
	if _, err := os.Stat(filepath.Join(outside, "reboot-required")); err != nil {
		t.Errorf("the file outside the root is gone: %v", err)
	}
	if _, _, err := f.Sentinel("relative"); err == nil {
		t.Error("a relative path was read")
	}
}
