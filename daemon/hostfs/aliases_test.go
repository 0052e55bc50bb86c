package hostfs

import (
	"errors"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Two entries reaching one node file through a symlinked folder are
// refused in prepare, naming both fields; the same entries on a node
// without the symlink pass.
func TestPreflightSameFile(t *testing.T) {
	node, f := newNode(t)
	mkdir(t, node, "var/opt", 0o755, 0)
	symlink(t, node, "opt", "var/opt")
	symlink(t, node, "etc/sysd", "/etc/systemd/system")
	a := fileAt("spec.config.storage.files[0]", "/var/opt/x")
	b := fileAt("spec.config.storage.files[1]", "/opt/x")
	b.Contents = []byte("other")
	unit := "[Unit]\n"
	tests := []struct {
		name      string
		desired   plan.Config
		field     string
		mentioned string
	}{
		{"relative folder link", plan.Config{Files: map[string]plan.File{a.Path: a, b.Path: b}},
			"spec.config.storage.files[1].path", "spec.config.storage.files[0]"},
		{"absolute folder link onto a unit file", plan.Config{
			Files: map[string]plan.File{"/etc/sysd/a.service": fileAt("spec.config.storage.files[0]", "/etc/sysd/a.service")},
			Units: map[string]plan.Unit{"a.service": {Field: "spec.config.systemd.units[0]", Name: "a.service", Contents: &unit}}},
			"spec.config.systemd.units[0].contents", "spec.config.storage.files[0]"},
		{"different files", plan.Config{Files: map[string]plan.File{a.Path: a, "/opt/y": fileAt("spec.config.storage.files[1]", "/opt/y")}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.desired.Name = "rendered-x"
			var diff plan.Diff
			for _, p := range plan.SortedKeys(tt.desired.Files) {
				diff.ChangedFiles = append(diff.ChangedFiles, tt.desired.Files[p])
			}
			for _, n := range plan.SortedKeys(tt.desired.Units) {
				diff.ChangedUnits = append(diff.ChangedUnits, tt.desired.Units[n])
			}
			err := f.Preflight(plan.Config{}, tt.desired, diff)
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *plan.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field || !strings.Contains(ce.Msg, tt.mentioned) ||
				!strings.Contains(ce.Msg, "same node file") {
				t.Fatalf("Preflight: %v, want %s naming %s", err, tt.field, tt.mentioned)
			}
		})
	}
}

// Enabling a unit with no unit file in the config or on the node is
// refused at its enabled field; one the node has (in any search folder,
// as an instance of a template) or the config writes passes. A unit masked
// by a link to /dev/null has no unit file once unmasked.
func TestPreflightEnableNotFound(t *testing.T) {
	node, f := newNode(t)
	put(t, node, "usr/lib/systemd/system/vendor.service", "[Unit]\n", 0o644)
	put(t, node, "usr/lib/systemd/system/getty@.service", "[Unit]\n", 0o644)
	put(t, node, "etc/systemd/system/local.service", "[Unit]\n", 0o644)
	symlink(t, node, "etc/systemd/system/masked.service", "/dev/null")
	on := true
	contents := "[Unit]\n"
	for _, tt := range []struct {
		unit    plan.Unit
		refused bool
	}{
		{plan.Unit{Name: "vendor.service", Enabled: &on}, false},
		{plan.Unit{Name: "local.service", Enabled: &on}, false},
		{plan.Unit{Name: "getty@tty3.service", Enabled: &on}, false},
		{plan.Unit{Name: "new.service", Enabled: &on, Contents: &contents}, false},
		{plan.Unit{Name: "missing.service", Enabled: &on}, true},
		{plan.Unit{Name: "missing@x.service", Enabled: &on}, true},
		{plan.Unit{Name: "masked.service", Enabled: &on}, true},
		{plan.Unit{Name: "missing.service", Mask: true}, false},
	} {
		u := tt.unit
		u.Field = "spec.config.systemd.units[0]"
		desired := plan.Config{Name: "rendered-x", Units: map[string]plan.Unit{u.Name: u}}
		err := f.Preflight(plan.Config{}, desired, plan.Diff{ChangedUnits: []plan.Unit{u}})
		var ce *plan.ConfigError
		switch {
		case !tt.refused && err != nil:
			t.Errorf("%s: %v", u.Name, err)
		case tt.refused && (!errors.As(err, &ce) || ce.Field != u.Field+".enabled" || !strings.Contains(ce.Msg, "no unit file")):
			t.Errorf("%s: %v, want a refusal at %s.enabled", u.Name, err, u.Field)
		}
	}
}
