package plan

import (
	"reflect"
	"testing"
)

// A port of the upstream daemon's TestFindClosestFilePolicyPathMatch: the
// longest path equal to the file or a directory above it decides.
func TestFileRuleFor(t *testing.T) {
	rules := func(paths ...string) Policy {
		var p Policy
		for _, path := range paths {
			p.Files = append(p.Files, FileRule{Path: path, Actions: []Action{{Type: ActNone}}, Source: path})
		}
		return p
	}
	tests := []struct {
		name, file string
		policy     Policy
		want       string // the rule's path; "" for none
	}{
		{"no rule", "/etc/mco/test", rules("/etc/example"), ""},
		{"exact", "/etc/mco/test1", rules("/etc/mco/test1", "/etc/mco/test2"), "/etc/mco/test1"},
		{"closest directory", "/etc/mco/f1/f2/example", rules("/etc/mco/f1", "/etc/mco/f1/f2", "/etc/mco/f1/f2/f3"), "/etc/mco/f1/f2"},
		{"exact beats directories", "/etc/mco/f1/f2/f3", rules("/etc/mco/f1", "/etc/mco/f1/f2", "/etc/mco/f1/f2/f3"), "/etc/mco/f1/f2/f3"},
		{"partial names never match", "/etc/mco/f1/f2/f3", rules("/etc/mco/f1/test", "/etc/mco/f1/f2/test", "/etc/mco/f1/f2/f3/f4"), ""},
		{"sibling with a common prefix", "/etc/foobar", rules("/etc/foo"), ""},
		{"trailing slash", "/etc/foo/a", rules("/etc/foo/"), "/etc/foo/"},
		{"root", "/etc/a", rules("/"), "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := tt.policy.FileRuleFor(tt.file)
			if ok != (tt.want != "") || r.Path != tt.want {
				t.Errorf("FileRuleFor(%q) = %q, %v; want %q", tt.file, r.Path, ok, tt.want)
			}
		})
	}
}

// The defaults are upstream's table: a port of the cases of the upstream
// daemon's TestCalculatePostConfigChangeAction, decided by the node
// disruption policy as upstream decides them once the cluster is up.
func TestDefaultPolicyUpstreamCases(t *testing.T) {
	const (
		pull     = "/var/lib/kubelet/config.json"
		regs     = "/etc/containers/registries.conf"
		random   = "/etc/random-reboot-file"
		kubeCA   = "/etc/kubernetes/kubelet-ca.crt"
		policy   = "/etc/containers/policy.json"
		gpg      = "/etc/machine-config-daemon/no-reboot/containers-gpg.pub"
		userCA   = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"
		nmstate  = "/etc/nmstate/openshift/worker.yml"
		regsDir  = "/etc/containers/registries.d/a.yaml"
		credProv = "/etc/kubernetes/credential-providers/ecr.yaml"
	)
	reload := Action{Type: ActReload, Unit: CRIOUnit}
	tests := []struct {
		name    string
		diff    Diff
		kind    ActionKind
		actions []Action
	}{
		{"a file no rule covers reboots", files(random), ActionReboot, nil},
		{"pull secret: none", files(pull), ActionNone, nil},
		{"SSH keys: none", Diff{SSHKeys: coreKeys()}, ActionNone, nil},
		{"registries: special", files(regs), ActionReloadCRIO, []Action{{Type: ActSpecial}}},
		{"kubelet CA: none", files(kubeCA), ActionNone, nil},
		{"registries beside the pull secret", files(regs, pull), ActionReloadCRIO, []Action{{Type: ActSpecial}}},
		{"OS image beside registries and SSH keys", Diff{ChangedFiles: []File{{Path: regs}}, SSHKeys: coreKeys(), OSImageChanged: true}, ActionReboot, nil},
		{"pull secret added", files(pull), ActionNone, nil},
		{"registries removed", Diff{RemovedFiles: []string{regs}}, ActionReloadCRIO, []Action{{Type: ActSpecial}}},
		{"kernel arguments beside none", Diff{ChangedFiles: []File{{Path: pull}, {Path: kubeCA}}, SSHKeys: coreKeys(), KernelArgsAdded: []string{"karg1"}}, ActionReboot, nil},
		{"policy.json: reload", files(policy), ActionReloadCRIO, []Action{reload}},
		{"signature key: reload", files(gpg), ActionReloadCRIO, []Action{reload}},
		{"user CA: update-ca-trust, then restart CRI-O", files(userCA), ActionReloadCRIO,
			[]Action{{Type: ActRestart, Unit: updateCATrustUnit}, {Type: ActRestart, Unit: CRIOUnit}}},
		{"user CA then the signature key: both, in order", files(userCA, gpg), ActionReloadCRIO,
			[]Action{{Type: ActRestart, Unit: updateCATrustUnit}, {Type: ActRestart, Unit: CRIOUnit}, reload}},
		{"nmstate: none", files(nmstate), ActionNone, nil},
		{"registries.d: reload", files(regsDir), ActionReloadCRIO, []Action{reload}},
		{"credential providers: restart the kubelet", files(credProv), ActionRestartUnit, []Action{{Type: ActRestart, Unit: kubeletUnit}}},
		{"a unit no rule covers reboots", Diff{ChangedUnits: []Unit{{Name: "foo.service"}}}, ActionReboot, nil},
		{"the IRI unit: daemon-reload, restart", Diff{ChangedUnits: []Unit{{Name: iriRegistryUnit}}}, ActionRestartUnit,
			[]Action{{Type: ActDaemonReload}, {Type: ActRestart, Unit: iriRegistryUnit}}},
		{"kernel type", Diff{KernelTypeChanged: true}, ActionReboot, nil},
		{"extensions", Diff{ExtensionsChanged: true}, ActionReboot, nil},
		{"nothing", Diff{}, ActionNone, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DefaultPolicy().PostAction(Config{}, Config{}, tt.diff)
			if got.Kind != tt.kind || !reflect.DeepEqual(got.Actions, tt.actions) {
				t.Errorf("PostAction = %s %v, want %s %v (reasons %q)", got.Kind, got.Actions, tt.kind, tt.actions, got.Reasons)
			}
			if got.NeedsDrain() != (tt.kind == ActionReboot) && tt.kind != ActionReloadCRIO {
				t.Errorf("NeedsDrain() = %v", got.NeedsDrain())
			}
		})
	}
}

func files(paths ...string) Diff {
	var d Diff
	for _, p := range paths {
		d.ChangedFiles = append(d.ChangedFiles, File{Path: p})
	}
	return d
}

// Upstream's rules for combining actions: any Reboot wins, None beside
// others is dropped, a Drain drains without a reboot, a user's SSH key rule
// replaces the default, and the reasons name each change's rule.
func TestPostActionCombines(t *testing.T) {
	user := Policy{
		Files: []FileRule{
			{Path: "/etc/foo", Actions: []Action{{Type: ActRestart, Unit: "foo.service"}}, Source: "files[0]"},
			{Path: "/etc/drain", Actions: []Action{{Type: ActDrain}, {Type: ActReload, Unit: "bar.service"}}, Source: "files[1]"},
			{Path: "/etc/none", Actions: []Action{{Type: ActNone}}, Source: "files[2]"},
			{Path: "/etc/reboot", Actions: []Action{{Type: ActReboot}}, Source: "files[3]"},
		},
		Units:  []UnitRule{{Name: "foo.service", Actions: []Action{{Type: ActDaemonReload}, {Type: ActRestart, Unit: "foo.service"}}, Source: "units[0]"}},
		SSHKey: []Action{{Type: ActReload, Unit: "sshd.service"}}, SSHKeySource: "sshkey",
	}
	p := DefaultPolicy().With(user)
	tests := []struct {
		name string
		diff Diff
		want PostAction
	}{
		{"restart, none dropped", files("/etc/foo/a", "/etc/none"), PostAction{Kind: ActionRestartUnit,
			Actions: []Action{{Type: ActRestart, Unit: "foo.service"}},
			Reasons: []string{"/etc/foo/a: Restart foo.service [rule files[0] /etc/foo]", "/etc/none: None [rule files[2] /etc/none]"}}},
		{"drain without reboot", files("/etc/drain/x"), PostAction{Kind: ActionReloadUnit, Drain: true, DrainReason: "the policy asks for a drain",
			Actions: []Action{{Type: ActDrain}, {Type: ActReload, Unit: "bar.service"}},
			Reasons: []string{"/etc/drain/x: Drain, Reload bar.service [rule files[1] /etc/drain]"}}},
		{"reboot wins", files("/etc/foo/a", "/etc/reboot"), PostAction{Kind: ActionReboot, Drain: true, DrainReason: "the node reboots",
			Reasons: []string{"/etc/foo/a: Restart foo.service [rule files[0] /etc/foo]", "/etc/reboot: Reboot [rule files[3] /etc/reboot]"}}},
		{"unit rule, duplicates listed once", Diff{ChangedFiles: []File{{Path: "/etc/foo/a"}}, ChangedUnits: []Unit{{Name: "foo.service"}}},
			PostAction{Kind: ActionRestartUnit, Actions: []Action{{Type: ActRestart, Unit: "foo.service"}, {Type: ActDaemonReload}},
				Reasons: []string{"/etc/foo/a: Restart foo.service [rule files[0] /etc/foo]",
					"unit foo.service: DaemonReload, Restart foo.service [rule units[0]]"}}},
		{"SSH keys by the user's rule", Diff{SSHKeys: coreKeys()}, PostAction{Kind: ActionReloadUnit,
			Actions: []Action{{Type: ActReload, Unit: "sshd.service"}}, Reasons: []string{"SSH keys: Reload sshd.service [rule sshkey]"}}},
		{"the password hash by the SSH key rule", Diff{PasswordHashChanged: true}, PostAction{Kind: ActionReloadUnit,
			Actions: []Action{{Type: ActReload, Unit: "sshd.service"}}, Reasons: []string{"password hash: Reload sshd.service [rule sshkey]"}}},
		{"removed unit with no rule", Diff{RemovedUnits: []Unit{{Name: "old.service"}}}, PostAction{Kind: ActionReboot, Drain: true,
			DrainReason: "the node reboots", Reasons: []string{"unit old.service (removed): Reboot [no rule matches]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.PostAction(Config{}, Config{}, tt.diff); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PostAction:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// A user's rule replaces the default of the same path in place (upstream's
// MergeClusterPolicies); others are appended; the defaults are untouched.
func TestPolicyWith(t *testing.T) {
	def := DefaultPolicy()
	user := Policy{Files: []FileRule{{Path: "/etc/containers/policy.json", Actions: []Action{{Type: ActReboot}}, Source: "u0"},
		{Path: "/etc/x", Actions: []Action{{Type: ActNone}}, Source: "u1"}}}
	p := def.With(user)
	if len(p.Files) != len(def.Files)+1 {
		t.Fatalf("With: %d file rules, want %d", len(p.Files), len(def.Files)+1)
	}
	i := indexOf(def.Files, func(f FileRule) bool { return f.Path == "/etc/containers/policy.json" })
	if p.Files[i].Source != "u0" || p.Files[len(p.Files)-1].Source != "u1" {
		t.Errorf("merge order: %v", p.Files)
	}
	if def.Files[i].Source != "default" {
		t.Errorf("With changed the defaults: %v", def.Files[i])
	}
	if !reflect.DeepEqual(p.SSHKey, DefaultSSHKeyActions()) {
		t.Errorf("SSH key rule without the user's: %v", p.SSHKey)
	}
}

func TestSummary(t *testing.T) {
	p := DefaultPolicy().With(Policy{Files: []FileRule{{Path: "/etc/foo", Actions: []Action{{Type: ActRestart, Unit: "foo.service"}}, Source: "f0"}}})
	tests := []struct {
		name string
		diff Diff
		want string
	}{
		{"empty", Diff{}, "Post action: None; no drain; no changes"},
		{"reboot", Diff{
			ChangedFiles: []File{{Path: "/etc/a"}, {Path: "/etc/b"}}, RemovedFiles: []string{"/etc/c"},
			ChangedUnits: []Unit{{Name: "foo.service"}}, SSHKeys: coreKeys(),
		}, "Post action: Reboot; drain required; 3 files (1 removed), 1 unit, SSH keys changed, OS image unchanged; " +
			"reasons: /etc/a: Reboot [no rule matches], /etc/b: Reboot [no rule matches], /etc/c (removed): Reboot [no rule matches] and 2 more"},
		{"crio", Diff{ChangedFiles: []File{{Path: "/etc/containers/policy.json"}, {Path: "/etc/foo/x"}}},
			"Post action: ReloadCRIO (Reload crio.service, Restart foo.service); no drain; 2 files, 0 units, OS image unchanged; " +
				"reasons: /etc/containers/policy.json: Reload crio.service [rule default /etc/containers/policy.json], /etc/foo/x: Restart foo.service [rule f0 /etc/foo]"},
		{"os", Diff{OSImageChanged: true, KernelArgsAdded: []string{"a", "b"}, KernelArgsRemoved: []string{"c"}, ExtensionsChanged: true, KernelTypeChanged: true},
			"Post action: Reboot; drain required; 0 files, 0 units, OS image changed, kernel arguments +2 -1, extensions changed, kernel type changed; " +
				"reasons: OS image: Reboot [always], kernel arguments: Reboot [always], extensions: Reboot [always] and 1 more"},
		{"ssh", Diff{SSHKeys: coreKeys()}, "Post action: None; no drain; 0 files, 0 units, SSH keys changed, OS image unchanged; reasons: SSH keys: None [rule default]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summary(tt.diff, p.PostAction(Config{}, Config{}, tt.diff)); got != tt.want {
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

// coreKeys is a change of core's SSH keys.
func coreKeys() []UserKeys { return []UserKeys{{User: "core", Keys: []string{"k"}}} }
