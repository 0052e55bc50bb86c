package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

func TestWriteFileAtomic(t *testing.T) {
	node, f := newNode(t)
	file := plan.File{
		Path: "/etc/app/bin/tool", Contents: []byte("#!/bin/sh\n"), Mode: 0o4755,
		User: plan.Owner{Name: "core"}, Group: plan.Owner{Name: "wheel"},
	}
	if err := f.WriteFile(file); err != nil {
		t.Fatal(err)
	}
	want := fileState{Kind: "file", Data: "#!/bin/sh\n", Mode: 0o4755, UID: 1000, GID: 10}
	if got := stateOf(t, f.Abs(file.Path)); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := stateOf(t, filepath.Join(node, "etc/app")); got.Mode != 0o755 {
		t.Errorf("parent dir mode %04o, want 0755", got.Mode)
	}
	// Rewrite with Go's setgid flag and numeric owner: no temp file stays.
	file.Mode = fs.ModeSetgid | 0o750
	file.User, file.Group = plan.Owner{ID: intp(7)}, plan.Owner{ID: intp(8)}
	if err := f.WriteFile(file); err != nil {
		t.Fatal(err)
	}
	want = fileState{Kind: "file", Data: "#!/bin/sh\n", Mode: 0o2750, UID: 7, GID: 8}
	if got := stateOf(t, f.Abs(file.Path)); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	names, err := os.ReadDir(filepath.Join(node, "etc/app/bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 {
		t.Errorf("dir holds %v, want only tool", names)
	}
	if got := stateOf(t, filepath.Join(node, "var/lib/nodeconfd")); got.Mode != 0o700 {
		t.Errorf("state dir mode %04o, want 0700", got.Mode)
	}
}

func TestLookupOwner(t *testing.T) {
	_, f := newNode(t)
	tests := []struct {
		name       string
		user, grp  plan.Owner
		uid, gid   int
		errContain string
	}{
		{name: "zero is root"},
		{name: "names", user: plan.Owner{Name: "core"}, grp: plan.Owner{Name: "wheel"}, uid: 1000, gid: 10},
		{name: "ids as given", user: plan.Owner{ID: intp(4242)}, grp: plan.Owner{ID: intp(77)}, uid: 4242, gid: 77},
		{name: "altfiles", user: plan.Owner{Name: "chrony"}, grp: plan.Owner{Name: "chrony"}, uid: 994, gid: 992},
		{name: "unknown user", user: plan.Owner{Name: "nobody2"}, errContain: `"nobody2"`},
		{name: "unknown group", grp: plan.Owner{Name: "ghosts"}, errContain: `"ghosts"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid, gid, err := f.lookupOwner(tt.user, tt.grp)
			if tt.errContain != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errContain) {
					t.Fatalf("err = %v, want one naming %s", err, tt.errContain)
				}
				return
			}
			if err != nil || uid != tt.uid || gid != tt.gid {
				t.Fatalf("got %d:%d, %v; want %d:%d", uid, gid, err, tt.uid, tt.gid)
			}
		})
	}
}

// Nothing is written outside the node root: a path that climbs past it is
// refused, and a symlink's absolute target is read relative to the root,
// as Ignition reads it (a node's /etc/pki/tls/certs/ca-bundle.crt links to
// /etc/pki/ca-trust/...): a symlink to the host's folder outside leads to
// the same path inside the root. A symlink at the path itself is replaced,
// never followed.
func TestEscapesRejected(t *testing.T) {
	node, f := newNode(t)
	outside := filepath.Join(filepath.Dir(node), "outside")
	for link, target := range map[string]string{
		"etc/abs-link":  filepath.Join(outside, "secret"), // target symlink out
		"etc/rel-link":  "../../outside/secret",
		"etc/to-root":   "/", // parent dir symlink to /
		"etc/to-out":    outside,
		"etc/up":        "../..",
		"etc/ok-target": "inside", // stays inside: fine
	} {
		if err := os.Symlink(target, filepath.Join(node, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path    string
		wantErr bool
		lands   string // where the file lands, relative to node
	}{
		{"/etc/abs-link", false, "etc/abs-link"},
		{"/etc/rel-link", false, "etc/rel-link"},
		{"/etc/to-root" + outside + "/secret", false, outside[1:] + "/secret"},
		{"/etc/to-root/srv/new", false, "srv/new"},
		{"/etc/to-out/secret2", false, outside[1:] + "/secret2"},
		{"/etc/up/outside/secret", true, ""},
		{"/etc/../../outside/secret", true, ""},
		{"/../outside/secret", true, ""},
		{"etc/relative", true, ""},
		{"/var/lib/nodeconfd/orig/etc/passwd", true, ""},
		{"/etc/ok-target", false, "etc/ok-target"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			err := f.WriteFile(plan.File{Path: tt.path, Contents: []byte("x"), Mode: 0o644})
			if !tt.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				if got := stateOf(t, filepath.Join(node, tt.lands)); got.Kind != "file" || got.Data != "x" {
					t.Errorf("%s holds %+v, want the file", tt.lands, got)
				}
				return
			}
			if err == nil {
				t.Fatal("write succeeded")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not name %s", err, tt.path)
			}
		})
	}
	if got := stateOf(t, filepath.Join(outside, "secret")); got.Data != "outside" {
		t.Errorf("outside file changed: %+v", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside dir holds %v", entries)
	}
	// The replaced link was kept as the original, a link.
	if got := stateOf(t, filepath.Join(node, "var/lib/nodeconfd/orig/etc/abs-link")); got.Kind != "symlink" {
		t.Errorf("the original of abs-link is %+v, want the symlink", got)
	}
	// The in-root link was replaced by a file, its target left alone.
	if got := stateOf(t, filepath.Join(node, "etc/inside")); got.Kind != "absent" {
		t.Errorf("link target written: %+v", got)
	}
}

func TestBackupOnceAndRestore(t *testing.T) {
	node, f := newNode(t)
	put(t, node, "etc/vendor.conf", "vendor", 0o640)
	if err := os.Chown(filepath.Join(node, "etc/vendor.conf"), 1000, 10); err != nil {
		t.Fatal(err)
	}
	orig := stateOf(t, filepath.Join(node, "etc/vendor.conf"))
	backup := filepath.Join(node, "var/lib/nodeconfd/orig/etc/vendor.conf")
	for _, data := range []string{"ours 1", "ours 2"} {
		if err := f.WriteFile(plan.File{Path: "/etc/vendor.conf", Contents: []byte(data), Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, backup); got != orig {
			t.Fatalf("backup %+v, want %+v", got, orig)
		}
	}
	for range 2 { // idempotent: the second removal leaves the original
		if err := f.RemoveFile("/etc/vendor.conf"); err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, filepath.Join(node, "etc/vendor.conf")); got != orig {
			t.Fatalf("restored %+v, want %+v", got, orig)
		}
		if got := stateOf(t, backup); got.Kind != "absent" {
			t.Fatalf("backup left: %+v", got)
		}
	}
	// Managed again: a fresh backup of the original is taken.
	if err := f.WriteFile(plan.File{Path: "/etc/vendor.conf", Contents: []byte("ours 3"), Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, backup); got != orig {
		t.Fatalf("second backup %+v, want %+v", got, orig)
	}
	if err := f.RemoveFile("/etc/vendor.conf"); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, filepath.Join(node, "etc/vendor.conf")); got != orig {
		t.Fatalf("restored %+v, want %+v", got, orig)
	}
}

func TestBackupOfSymlink(t *testing.T) {
	node, f := newNode(t)
	put(t, node, "usr/share/zone", "zone", 0o644)
	if err := os.Symlink("../usr/share/zone", filepath.Join(node, "etc/localtime")); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile(plan.File{Path: "/etc/localtime", Contents: []byte("tz"), Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, filepath.Join(node, "usr/share/zone")); got.Data != "zone" {
		t.Fatalf("link target changed: %+v", got)
	}
	if err := f.RemoveFile("/etc/localtime"); err != nil {
		t.Fatal(err)
	}
	want := fileState{Kind: "symlink", Data: "../usr/share/zone"}
	if got := stateOf(t, filepath.Join(node, "etc/localtime")); got != want {
		t.Fatalf("restored %+v, want %+v", got, want)
	}
}

func TestRemoveWithoutOriginal(t *testing.T) {
	node, f := newNode(t)
	put(t, node, "etc/by-ignition", "x", 0o644)
	if err := f.WriteFile(plan.File{Path: "/etc/new/ours", Contents: []byte("x"), Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(node, "var/lib/nodeconfd/noorig/etc/new/ours")
	if got := stateOf(t, marker); got.Kind != "file" {
		t.Fatalf("no marker: %+v", got)
	}
	for _, p := range []string{"/etc/new/ours", "/etc/new/ours", "/etc/by-ignition"} {
		if err := f.RemoveFile(p); err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, f.Abs(p)); got.Kind != "absent" {
			t.Fatalf("%s left: %+v", p, got)
		}
	}
	if got := stateOf(t, marker); got.Kind != "absent" {
		t.Fatalf("marker left: %+v", got)
	}
}

func TestCheckFile(t *testing.T) {
	_, f := newNode(t)
	file := plan.File{Path: "/etc/secret", Contents: []byte("hunter2"), Mode: 0o600, User: plan.Owner{Name: "core"}}
	if err := f.WriteFile(file); err != nil {
		t.Fatal(err)
	}
	if err := f.CheckFile(file); err != nil {
		t.Fatalf("check after write: %v", err)
	}
	with := func(change func(*plan.File)) plan.File {
		c := file
		change(&c)
		return c
	}
	tests := []struct {
		name string
		want plan.File
		errs []string
	}{
		{"contents", with(func(c *plan.File) { c.Contents = []byte("swordfish") }), []string{"contents differ"}},
		{"mode", with(func(c *plan.File) { c.Mode = 0o4600 }), []string{"mode is 0600, want 4600"}},
		{"owner", with(func(c *plan.File) { c.User = plan.Owner{}; c.Group = plan.Owner{ID: intp(5)} }), []string{"owner is 1000:0, want 0:5"}},
		{"all", with(func(c *plan.File) { c.Contents = nil; c.Mode = 0o644; c.User = plan.Owner{} }), []string{"contents", "mode", "owner"}},
		{"missing", with(func(c *plan.File) { c.Path = "/etc/other" }), []string{"/etc/other: missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.CheckFile(tt.want)
			if err == nil {
				t.Fatal("check passed")
			}
			msg := err.Error()
			for _, s := range append(tt.errs, tt.want.Path) {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q lacks %q", msg, s)
				}
			}
			if strings.Contains(msg, "hunter2") || strings.Contains(msg, "swordfish") {
				t.Errorf("error %q leaks contents", msg)
			}
		})
	}
}

func TestState(t *testing.T) {
	node, f := newNode(t)
	if _, err := f.ReadState("current"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing state: %v", err)
	}
	if err := f.WriteState("current", []byte("rendered-1")); err != nil {
		t.Fatal(err)
	}
	data, err := f.ReadState("current")
	if err != nil || string(data) != "rendered-1" {
		t.Fatalf("got %q, %v", data, err)
	}
	if got := stateOf(t, filepath.Join(node, "var/lib/nodeconfd/current")); got.Mode != 0o600 {
		t.Errorf("state mode %04o", got.Mode)
	}
	for _, bad := range []string{"", "a/b", "..", ".hidden", "orig", "txn"} {
		if err := f.WriteState(bad, nil); err == nil {
			t.Errorf("WriteState(%q) succeeded", bad)
		}
	}
}

func TestModes(t *testing.T) {
	tests := []struct {
		in  fs.FileMode
		raw uint32
	}{
		{0o644, 0o644},
		{0o4755, 0o4755},
		{0o7777, 0o7777},
		{fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky | 0o755, 0o7755},
	}
	for _, tt := range tests {
		if got := rawMode(tt.in); got != tt.raw {
			t.Errorf("rawMode(%v) = %04o, want %04o", tt.in, got, tt.raw)
		}
		if got := rawMode(goMode(tt.raw)); got != tt.raw {
			t.Errorf("round trip of %04o = %04o", tt.raw, got)
		}
	}
}

func TestPendingTxnsEmpty(t *testing.T) {
	_, f := newNode(t)
	ids, err := f.PendingTxns()
	if err != nil || !slices.Equal(ids, nil) {
		t.Fatalf("got %v, %v", ids, err)
	}
}

// A removal interrupted after the restore (backup still there) converges.
func TestRemoveFileConvergesAfterCrash(t *testing.T) {
	node, f := newNode(t)
	put(t, node, "etc/v.conf", "vendor", 0o640)
	orig := stateOf(t, filepath.Join(node, "etc/v.conf"))
	if err := f.WriteFile(plan.File{Path: "/etc/v.conf", Contents: []byte("ours"), Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	put(t, node, "etc/v.conf", "vendor", 0o640) // the restore happened, then the crash
	if err := f.RemoveFile("/etc/v.conf"); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, filepath.Join(node, "etc/v.conf")); got != orig {
		t.Fatalf("got %+v, want %+v", got, orig)
	}
	for p, kind := range map[string]string{"orig/etc/v.conf": "absent", "restored/etc/v.conf": "file"} {
		if got := stateOf(t, filepath.Join(node, "var/lib/nodeconfd", p)); got.Kind != kind {
			t.Errorf("%s: %+v, want %s", p, got, kind)
		}
	}
}
