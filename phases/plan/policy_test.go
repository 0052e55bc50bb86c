package plan

import (
	"reflect"
	"strings"
	"testing"
)

func TestPolicyMatch(t *testing.T) {
	p := DefaultPolicy().With(
		Rule{Prefix: "/etc/foo", Action: ActionRestartUnit, Unit: "foo.service"},
		Rule{Prefix: "/etc/foo/special/", Action: ActionNone},
		Rule{Prefix: "/", Action: ActionDaemonReload},
	)
	tests := []struct {
		path   string
		prefix string
	}{
		{"/var/lib/kubelet/config.json", "/var/lib/kubelet/config.json"},
		{"/var/lib/kubelet/config.jsonx", "/"},
		{"/etc/containers/registries.conf", "/etc/containers/registries.conf"},
		{"/etc/containers/registries.conf.d/x.conf", "/"},
		{"/etc/containers/registries.d/a.yaml", "/etc/containers/registries.d/"},
		{"/etc/containers/registries.d/sub/a.yaml", "/etc/containers/registries.d/"},
		{"/etc/crio/policies/p.json", "/etc/crio/policies/"},
		{"/etc/foo", "/etc/foo"},
		{"/etc/foo/a.conf", "/etc/foo"},
		{"/etc/foobar", "/"},
		{"/etc/foo/special/x", "/etc/foo/special/"},
	}
	for _, tt := range tests {
		r, ok := p.match(tt.path)
		if !ok || r.Prefix != tt.prefix {
			t.Errorf("match(%q) = %q, %v; want %q", tt.path, r.Prefix, ok, tt.prefix)
		}
	}
	if r, ok := DefaultPolicy().match("/etc/kubernetes/kubelet.conf"); ok {
		t.Errorf("default policy matches /etc/kubernetes/kubelet.conf with %+v", r)
	}
}

func TestPolicyWithOverrides(t *testing.T) {
	def := DefaultPolicy()
	p := def.With(Rule{Prefix: "/etc/containers/policy.json", Action: ActionReboot}, Rule{Prefix: "/etc/x", Action: ActionNone})
	if len(p.Rules) != len(def.Rules)+1 {
		t.Errorf("With: %d rules, want %d", len(p.Rules), len(def.Rules)+1)
	}
	if r, _ := p.match("/etc/containers/policy.json"); r.Action != ActionReboot {
		t.Errorf("admin override lost: %+v", r)
	}
	if r, _ := def.match("/etc/containers/policy.json"); r.Action != ActionReloadCRIO {
		t.Errorf("With changed the original policy: %+v", r)
	}
}

func TestParsePolicy(t *testing.T) {
	got, err := ParsePolicy([]byte(`
rules:
- {path: /etc/foo/, action: Restart, unit: foo.service}
- {path: /etc/bar.conf, action: None}
- path: /etc/baz
  action: Reload
  unit: baz@x.service
- {path: /etc/systemd/system/, action: DaemonReload}
- {path: /etc/containers/mine.conf, action: ReloadCRIO}
- {path: /etc/always, action: Reboot}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Prefix: "/etc/foo/", Action: ActionRestartUnit, Unit: "foo.service"},
		{Prefix: "/etc/bar.conf", Action: ActionNone},
		{Prefix: "/etc/baz", Action: ActionReloadUnit, Unit: "baz@x.service"},
		{Prefix: "/etc/systemd/system/", Action: ActionDaemonReload},
		{Prefix: "/etc/containers/mine.conf", Action: ActionReloadCRIO},
		{Prefix: "/etc/always", Action: ActionReboot},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePolicy:\n got %+v\nwant %+v", got, want)
	}
	if rules, err := ParsePolicy(nil); err != nil || len(rules) != 0 {
		t.Errorf("ParsePolicy(nil) = %v, %v", rules, err)
	}
}

func TestParsePolicyErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"syntax", "rules: [", "parsing policy"},
		{"unknown field", "rules: [{path: /a, action: None, units: x}]", "unknown field"},
		{"not a list", "rules: 3", "parsing policy"},
		{"unknown action", "rules: [{path: /a, action: None}, {path: /b, action: restart}]",
			`policy rules[1] (path "/b"): unknown action "restart" (want one of None, DaemonReload, Reload, Restart, ReloadCRIO, Reboot)`},
		{"no action", "rules: [{path: /a}]", `unknown action ""`},
		{"relative path", "rules: [{path: etc/a, action: None}]", `policy rules[0] (path "etc/a"): path "etc/a" is not absolute`},
		{"empty path", "rules: [{action: None}]", "path is empty"},
		{"dirty path", "rules: [{path: /etc/../a/, action: None}]", "not clean"},
		{"restart without unit", "rules: [{path: /a, action: Restart}]", "action Restart needs a unit"},
		{"reload without unit", "rules: [{path: /a, action: Reload}]", "action Reload needs a unit"},
		{"bad unit", "rules: [{path: /a, action: Restart, unit: foo}]", "does not end in a unit type"},
		{"unit on reboot", "rules: [{path: /a, action: Reboot, unit: foo.service}]", `action Reboot takes no unit (got "foo.service")`},
		{"duplicate", "rules: [{path: /a, action: None}, {path: /a, action: Reboot}]", `policy rules[1]: path "/a" is already in rules[0]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParsePolicy error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestPostAction(t *testing.T) {
	p := DefaultPolicy().With(
		Rule{Prefix: "/etc/foo/", Action: ActionRestartUnit, Unit: "foo.service"},
		Rule{Prefix: "/etc/foo/reload.conf", Action: ActionReloadUnit, Unit: "foo.service"},
		Rule{Prefix: "/etc/bar.conf", Action: ActionReloadUnit, Unit: "bar.service"},
		Rule{Prefix: "/etc/systemd/system/", Action: ActionDaemonReload},
	)
	file := func(path string) File { return File{Path: path} }
	tests := []struct {
		name string
		diff Diff
		want PostAction
	}{
		{"empty", Diff{}, PostAction{Kind: ActionNone}},
		{"ssh keys", Diff{SSHKeysChanged: true}, PostAction{Kind: ActionNone, Reasons: []string{"SSH keys: none"}}},
		{"pull secret", Diff{ChangedFiles: []File{file("/var/lib/kubelet/config.json")}},
			PostAction{Kind: ActionNone, Reasons: []string{"/var/lib/kubelet/config.json: none"}}},
		{"registries", Diff{ChangedFiles: []File{file("/etc/containers/registries.conf"), file("/etc/containers/registries.d/a.yaml")}},
			PostAction{Kind: ActionReloadCRIO, ReloadUnits: []string{"crio.service"}, Reasons: []string{
				"/etc/containers/registries.conf: reload crio.service",
				"/etc/containers/registries.d/a.yaml: reload crio.service",
			}}},
		{"removed file counts", Diff{RemovedFiles: []string{"/etc/crio/policies/p.json"}},
			PostAction{Kind: ActionReloadCRIO, ReloadUnits: []string{"crio.service"}, Reasons: []string{
				"/etc/crio/policies/p.json (removed): reload crio.service"}}},
		{"unmatched file reboots", Diff{ChangedFiles: []File{file("/etc/x"), file("/var/lib/kubelet/config.json")}, RemovedFiles: []string{"/etc/y"}},
			PostAction{Kind: ActionReboot, Reasons: []string{
				"/etc/x: reboot (no rule matches)",
				"/var/lib/kubelet/config.json: none",
				"/etc/y (removed): reboot (no rule matches)",
			}}},
		{"reload and restart", Diff{ChangedFiles: []File{file("/etc/bar.conf"), file("/etc/foo/reload.conf"), file("/etc/foo/a.conf"),
			file("/etc/systemd/system/x.service.d/10.conf"), file("/etc/containers/policy.json")}},
			PostAction{Kind: ActionReloadCRIO, DaemonReload: true,
				ReloadUnits:  []string{"bar.service", "crio.service"},
				RestartUnits: []string{"foo.service"},
				Reasons: []string{
					"/etc/bar.conf: reload bar.service",
					"/etc/foo/reload.conf: reload foo.service",
					"/etc/foo/a.conf: restart foo.service",
					"/etc/systemd/system/x.service.d/10.conf: daemon-reload",
					"/etc/containers/policy.json: reload crio.service",
				}}},
		{"restart only", Diff{ChangedFiles: []File{file("/etc/foo/a.conf")}},
			PostAction{Kind: ActionRestartUnit, RestartUnits: []string{"foo.service"}, Reasons: []string{"/etc/foo/a.conf: restart foo.service"}}},
		{"daemon-reload only", Diff{ChangedFiles: []File{file("/etc/systemd/system/a.conf")}},
			PostAction{Kind: ActionDaemonReload, DaemonReload: true, Reasons: []string{"/etc/systemd/system/a.conf: daemon-reload"}}},
		{"reboot covers reloads", Diff{ChangedFiles: []File{file("/etc/bar.conf"), file("/etc/systemd/system/a.conf")},
			ChangedUnits: []Unit{{Name: "foo.service"}}, RemovedUnits: []Unit{{Name: "old.service"}}},
			PostAction{Kind: ActionReboot, Reasons: []string{
				"/etc/bar.conf: reload bar.service",
				"/etc/systemd/system/a.conf: daemon-reload",
				"unit foo.service: reboot",
				"unit old.service (removed): reboot",
			}}},
		{"os changes", Diff{OSImageChanged: true, KernelArgsAdded: []string{"a"}, ExtensionsChanged: true, KernelTypeChanged: true},
			PostAction{Kind: ActionReboot, Reasons: []string{
				"OS image: reboot", "kernel arguments: reboot", "extensions: reboot", "kernel type: reboot"}}},
		{"kernel args removed", Diff{KernelArgsRemoved: []string{"a"}},
			PostAction{Kind: ActionReboot, Reasons: []string{"kernel arguments: reboot"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.PostAction(tt.diff)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PostAction:\n got %+v\nwant %+v", got, tt.want)
			}
			if got.NeedsDrain() != (tt.want.Kind == ActionReboot) {
				t.Errorf("NeedsDrain() = %v", got.NeedsDrain())
			}
		})
	}
}

func TestSummary(t *testing.T) {
	p := DefaultPolicy().With(Rule{Prefix: "/etc/foo/", Action: ActionRestartUnit, Unit: "foo.service"})
	tests := []struct {
		name string
		diff Diff
		want string
	}{
		{"empty", Diff{}, "Post action: None; no drain; no changes"},
		{"reboot", Diff{
			ChangedFiles: []File{{Path: "/etc/a"}, {Path: "/etc/b"}}, RemovedFiles: []string{"/etc/c"},
			ChangedUnits: []Unit{{Name: "foo.service"}}, SSHKeysChanged: true,
		}, "Post action: Reboot; drain required; 3 files (1 removed), 1 unit, SSH keys changed, OS image unchanged; " +
			"reasons: /etc/a: reboot (no rule matches), /etc/b: reboot (no rule matches), /etc/c (removed): reboot (no rule matches) and 2 more"},
		{"crio", Diff{ChangedFiles: []File{{Path: "/etc/containers/registries.conf"}, {Path: "/etc/foo/x"}}},
			"Post action: ReloadCRIO (restart foo.service, reload crio.service); no drain; 2 files, 0 units, OS image unchanged; " +
				"reasons: /etc/containers/registries.conf: reload crio.service, /etc/foo/x: restart foo.service"},
		{"os", Diff{OSImageChanged: true, KernelArgsAdded: []string{"a", "b"}, KernelArgsRemoved: []string{"c"}, ExtensionsChanged: true, KernelTypeChanged: true},
			"Post action: Reboot; drain required; 0 files, 0 units, OS image changed, kernel arguments +2 -1, extensions changed, kernel type changed; " +
				"reasons: OS image: reboot, kernel arguments: reboot, extensions: reboot and 1 more"},
		{"ssh", Diff{SSHKeysChanged: true}, "Post action: None; no drain; 0 files, 0 units, SSH keys changed, OS image unchanged; reasons: SSH keys: none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summary(tt.diff, p.PostAction(tt.diff)); got != tt.want {
				t.Errorf("Summary:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestActionKindString(t *testing.T) {
	for k, want := range map[ActionKind]string{ActionNone: "None", ActionDaemonReload: "DaemonReload", ActionReloadUnit: "ReloadUnit",
		ActionRestartUnit: "RestartUnit", ActionReloadCRIO: "ReloadCRIO", ActionReboot: "Reboot", ActionKind(42): "Unknown"} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(k), got, want)
		}
	}
}
