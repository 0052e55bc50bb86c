package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// mkdir makes a host folder under node with a mode and owner.
func mkdir(t *testing.T, node, rel string, mode os.FileMode, uid int) {
	t.Helper()
	p := filepath.Join(node, rel)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, goMode(uint32(mode))); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, node, rel, target string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(node, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(node, rel)); err != nil {
		t.Fatal(err)
	}
}

func lchown(t *testing.T, node, rel string, uid int) {
	t.Helper()
	if err := os.Lchown(filepath.Join(node, rel), uid, uid); err != nil {
		t.Fatal(err)
	}
}

// hostileNode is a node root with every kind of unsafe folder.
func hostileNode(t *testing.T) (string, *FS) {
	node, f := newNode(t)
	put(t, node, "etc/plainfile", "x", 0o644)
	symlink(t, node, "etc/to-tmp", "/tmp")                         // absolute: the root's /tmp
	symlink(t, node, "etc/up", "../../..")                         // up past the root
	symlink(t, node, "etc/abs-local", "/var/usrlocal")             // absolute, in the root, root's
	symlink(t, node, "etc/user-link", "/var/usrlocal")             // absolute, owned by core
	lchown(t, node, "etc/user-link", 1000)                         //
	symlink(t, node, "etc/user-rel", "../var/usrlocal")            // relative, owned by core
	lchown(t, node, "etc/user-rel", 1000)                          //
	symlink(t, node, "etc/pki-bundle", "/etc/pki-real/bundle.pem") // a file path that is a link
	symlink(t, node, "etc/local", "../var/usrlocal")               // in-root, root's: like RHCOS /usr/local
	mkdir(t, node, "var/usrlocal/bin", 0o755, 0)                   //
	mkdir(t, node, "var/home/core", 0o700, 1000)                   // core's home
	mkdir(t, node, "etc/corestuff", 0o755, 1000)                   // a folder core owns
	symlink(t, node, "etc/via-core", "../var/home/core")           // a root symlink into core's home
	mkdir(t, node, "etc/open", 0o777, 0)                           // writable by all, not sticky
	mkdir(t, node, "tmp", 0o1777, 0)                               // sticky
	mkdir(t, node, "tmp/rootdir", 0o755, 0)                        // root's, in a sticky folder
	mkdir(t, node, "etc/adir/x", 0o755, 0)                         // a folder where a file goes
	mkdir(t, node, "etc/systemd/system/core.service.d", 0o755, 1000)
	symlink(t, node, "etc/corestuff/link", "/var/usrlocal") // root's link, in core's folder
	return node, f
}

func fileAt(field, p string) plan.File {
	return plan.File{Field: field, Path: p, Contents: []byte("x"), Mode: 0o644}
}

func TestPreflightPaths(t *testing.T) {
	node, f := hostileNode(t)
	before := tree(t, node, "")
	tests := []struct {
		path    string
		wantMsg string // "" when fine
	}{
		{"/etc/new/file", ""},
		{"/etc/local/bin/tool", ""}, // through a root-owned in-root symlink
		{"/tmp/rootdir/x", ""},
		{"/etc/plainfile/x", "is not a folder"},
		{"/etc/to-tmp/owned", "missing in a folder other users can write to"},
		{"/etc/up/x", "leads up past the node root"},
		{"/etc/abs-local/bin/tool", ""}, // through a root-owned absolute symlink
		{"/etc/pki-bundle", ""},         // the link is replaced
		{"/etc/user-link/bin/tool", "symlink owned by uid 1000"},
		{"/etc/user-rel/bin/tool", "symlink owned by uid 1000"},
		{"/etc/corestuff/link/x", "owned by uid 1000"},
		{"/etc/corestuff/x", "owned by uid 1000"},
		{"/etc/via-core/.bashrc", "owned by uid 1000"},
		{"/var/home/core/x/y", "owned by uid 1000"},
		{"/etc/open/x", "writable by other users"},
		{"/tmp/x", "missing in a folder other users can write to"},
		{"/tmp/new/x", "missing in a folder other users can write to"},
		{"/etc/adir", "is a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			diff := plan.Diff{ChangedFiles: []plan.File{fileAt("spec.config.storage.files[0]", "/etc/ok"), fileAt("spec.config.storage.files[1]", tt.path)}}
			err := f.Preflight(plan.Config{}, plan.Config{Name: "rendered-x"}, diff)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *plan.ConfigError
			if !errors.As(err, &ce) || ce.Object != "rendered-x" || ce.Field != "spec.config.storage.files[1].path" ||
				!strings.Contains(ce.Msg, tt.wantMsg) {
				t.Fatalf("Preflight: %v, want files[1].path: ...%s", err, tt.wantMsg)
			}
			// The write step refuses the same, before writing anything.
			tx, err := f.BeginTxn("t")
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if err := tx.WriteFiles(diff.ChangedFiles); err == nil {
				t.Fatal("the write succeeded")
			}
			if _, err := os.Lstat(filepath.Join(node, "etc/ok")); err == nil {
				t.Error("/etc/ok was written")
			}
		})
	}
	if _, err := os.Lstat("/tmp/owned"); err == nil {
		t.Error("the host's /tmp/owned was written")
	}
	after := tree(t, node, "var/lib/nodeconfd")
	for p, st := range after {
		if b, ok := before[p]; !ok || b != st {
			t.Errorf("%s changed: %+v, was %+v", p, st, b)
		}
	}
}

func TestPreflightOwners(t *testing.T) {
	_, f := newNode(t)
	big := plan.MaxID + 1
	tests := []struct {
		user, group plan.Owner
		field       string
	}{
		{plan.Owner{Name: "core"}, plan.Owner{Name: "wheel"}, ""},
		{plan.Owner{Name: "chrony"}, plan.Owner{ID: intp(plan.MaxID)}, ""},
		{plan.Owner{Name: "ghost"}, plan.Owner{}, "spec.config.storage.files[1].user.name"},
		{plan.Owner{}, plan.Owner{Name: "ghosts"}, "spec.config.storage.files[1].group.name"},
		{plan.Owner{ID: intp(-1)}, plan.Owner{}, "spec.config.storage.files[1].user.id"},
		{plan.Owner{}, plan.Owner{ID: &big}, "spec.config.storage.files[1].group.id"},
	}
	for _, tt := range tests {
		file := fileAt("spec.config.storage.files[1]", "/etc/owned")
		file.User, file.Group = tt.user, tt.group
		err := f.Preflight(plan.Config{}, plan.Config{Name: "rendered-x"},
			plan.Diff{ChangedFiles: []plan.File{fileAt("spec.config.storage.files[0]", "/etc/ok"), file}})
		var ce *plan.ConfigError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%+v %+v: %v", tt.user, tt.group, err)
		case tt.field != "" && (!errors.As(err, &ce) || ce.Field != tt.field):
			t.Errorf("%+v %+v: %v, want a refusal at %s", tt.user, tt.group, err, tt.field)
		}
	}
}

// Units, drop-ins and removed files get the same path checks.
func TestPreflightUnitsAndRemovals(t *testing.T) {
	node, f := hostileNode(t)
	contents := "[Unit]\n"
	mkdir(t, node, "etc/systemd/system/dir.service", 0o755, 0)
	tests := []struct {
		name  string
		diff  plan.Diff
		field string
	}{
		{"dropin in core's folder", plan.Diff{ChangedUnits: []plan.Unit{{Field: "spec.config.systemd.units[0]", Name: "core.service",
			Dropins: map[string]string{"10-x.conf": "[Service]\n"}}}}, "spec.config.systemd.units[0].dropins"},
		{"unit file is a folder", plan.Diff{ChangedUnits: []plan.Unit{{Field: "spec.config.systemd.units[1]", Name: "dir.service",
			Contents: &contents}}}, "spec.config.systemd.units[1].contents"},
		{"removed unit's dropin", plan.Diff{RemovedUnits: []plan.Unit{{Field: "spec.config.systemd.units[0]", Name: "core.service",
			Dropins: map[string]string{"10-x.conf": ""}}}}, "spec.config.systemd.units[0]"},
		{"removed through a symlink up", plan.Diff{RemovedFiles: []string{"/etc/up/x"}}, "spec.config.storage.files"},
		{"removed through core's symlink", plan.Diff{RemovedFiles: []string{"/etc/user-link/x"}}, "spec.config.storage.files"},
		{"removed in core's folder", plan.Diff{RemovedFiles: []string{"/etc/corestuff/x"}}, "spec.config.storage.files"},
		{"removed is a folder", plan.Diff{RemovedFiles: []string{"/etc/adir"}}, "spec.config.storage.files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.Preflight(plan.Config{Name: "rendered-old"}, plan.Config{Name: "rendered-x"}, tt.diff)
			var ce *plan.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("Preflight: %v, want a refusal at %s", err, tt.field)
			}
		})
	}
	// A removed file that is now a symlink is removed itself, never followed.
	put(t, node, "etc/target", "keep", 0o644)
	symlink(t, node, "etc/gone", "target")
	if err := f.Preflight(plan.Config{}, plan.Config{}, plan.Diff{RemovedFiles: []string{"/etc/gone", "/tmp/never-there"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.RemoveFile("/etc/gone"); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, filepath.Join(node, "etc/target")); got.Data != "keep" {
		t.Errorf("the symlink's target changed: %+v", got)
	}
}
