package plan

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestRuntimeOf(t *testing.T) {
	tests := []struct {
		in   string
		want Runtime
	}{
		{"containerd://2.1.0", RuntimeContainerd},
		{"containerd://1.7.27-0ubuntu1", RuntimeContainerd},
		{"cri-o://1.31.0", RuntimeCRIO},
		{"CRI-O://1.31.0", RuntimeCRIO},
		{" containerd://2.1.0 ", RuntimeContainerd},
		{"containerd://", RuntimeContainerd},
		{"", RuntimeUnknown},
		{"docker://27.1.1", RuntimeUnknown},
		{"testbed://1.0", RuntimeUnknown},
		{"containerd", RuntimeUnknown},        // no scheme separator
		{"containerd:2.1.0", RuntimeUnknown},  // not the kubelet's form
		{"cri-o-fork://1.0", RuntimeUnknown},  // another name
		{"xcontainerd://2.1", RuntimeUnknown}, // never a prefix match
	}
	for _, tt := range tests {
		if got := RuntimeOf(tt.in); got != tt.want {
			t.Errorf("RuntimeOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Each file of containerd's and each default rule that acts on CRI-O,
// decided on a containerd node, a CRI-O node and a node of an unknown
// runtime (which decides as a CRI-O node: upstream's table).
func TestPostActionPerRuntime(t *testing.T) {
	restartCtrd := []Action{{Type: ActRestart, Unit: ContainerdUnit}}
	reloadCRIO := []Action{{Type: ActReload, Unit: CRIOUnit}}
	special := []Action{{Type: ActSpecial}}
	userCA := "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"
	tests := []struct {
		file           string
		containerd     []Action // nil: nothing runs
		containerdKind ActionKind
		crio           []Action
		crioKind       ActionKind
	}{
		{"/etc/containerd/certs.d/registry.example.com/hosts.toml", nil, ActionNone, nil, ActionReboot},
		{"/etc/containerd/certs.d/_default/hosts.toml", nil, ActionNone, nil, ActionReboot},
		{"/etc/containerd/certs.d/registry.example.com:5000/ca.crt", nil, ActionNone, nil, ActionReboot},
		{"/etc/containerd/config.toml", restartCtrd, ActionRestartUnit, nil, ActionReboot},
		{"/etc/containerd/conf.d/10-mirror.toml", restartCtrd, ActionRestartUnit, nil, ActionReboot},
		{"/etc/containerd/other.toml", nil, ActionReboot, nil, ActionReboot}, // no rule: reboot, as upstream
		{"/etc/containerd/config.toml.d/a.toml", nil, ActionReboot, nil, ActionReboot},
		{"/etc/containers/policy.json", nil, ActionNone, reloadCRIO, ActionReloadCRIO},
		{"/etc/containers/registries.conf", nil, ActionNone, special, ActionReloadCRIO},
		{"/etc/containers/registries.d/a.yaml", nil, ActionNone, reloadCRIO, ActionReloadCRIO},
		{"/etc/crio/policies/ns.json", nil, ActionNone, reloadCRIO, ActionReloadCRIO},
		{"/etc/machine-config-daemon/no-reboot/containers-gpg.pub", nil, ActionNone, reloadCRIO, ActionReloadCRIO},
		{userCA, []Action{{Type: ActRestart, Unit: updateCATrustUnit}, {Type: ActRestart, Unit: ContainerdUnit}}, ActionRestartUnit,
			[]Action{{Type: ActRestart, Unit: updateCATrustUnit}, {Type: ActRestart, Unit: CRIOUnit}}, ActionReloadCRIO},
		// Runtime-independent rules stay.
		{"/var/lib/kubelet/config.json", nil, ActionNone, nil, ActionNone},
		{"/etc/kubernetes/credential-providers/ecr.yaml", []Action{{Type: ActRestart, Unit: kubeletUnit}}, ActionRestartUnit,
			[]Action{{Type: ActRestart, Unit: kubeletUnit}}, ActionRestartUnit},
	}
	unsafeRegs := Config{Files: map[string]File{RegistriesConfPath: {Path: RegistriesConfPath,
		Contents: []byte("unqualified-search-registries = [\"quay.io\", \"docker.io\"]\n")}}}
	desiredRegs := Config{Files: map[string]File{RegistriesConfPath: {Path: RegistriesConfPath,
		Contents: []byte("unqualified-search-registries = [\"docker.io\"]\n")}}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			check := func(rt Runtime, want []Action, kind ActionKind) {
				t.Helper()
				a := DefaultPolicy().ForRuntime(rt).PostAction(unsafeRegs, desiredRegs, files(tt.file))
				if !reflect.DeepEqual(a.Actions, want) || a.Kind != kind {
					t.Errorf("on a %s node: %v (%s), want %v (%s); %v", rt, a.Actions, a.Kind, want, kind, a.Reasons)
				}
				// Only a reboot drains; on CRI-O, registries.conf's unsafe
				// change too. Nothing of containerd's drains.
				wantDrain := kind == ActionReboot || (rt != RuntimeContainerd && tt.file == RegistriesConfPath)
				if a.Drain != wantDrain {
					t.Errorf("on a %s node: drain %v (%s), want %v", rt, a.Drain, a.DrainReason, wantDrain)
				}
			}
			check(RuntimeContainerd, tt.containerd, tt.containerdKind)
			check(RuntimeCRIO, tt.crio, tt.crioKind)
			check(RuntimeUnknown, tt.crio, tt.crioKind)
		})
	}
}

// On a CRI-O node and an unknown runtime the policy is upstream's, rule for
// rule; on a containerd node an administrator's rules are kept as given,
// also where a containerd default has the same path.
func TestForRuntimeKeepsAdministratorRules(t *testing.T) {
	def := DefaultPolicy()
	for _, rt := range []Runtime{RuntimeCRIO, RuntimeUnknown} {
		if got := def.ForRuntime(rt); !reflect.DeepEqual(got, def) {
			t.Errorf("ForRuntime(%s) changed the defaults", rt)
		}
	}
	mine := []Action{{Type: ActReload, Unit: "my.service"}}
	user := def.With(Policy{Files: []FileRule{
		{Path: "/etc/containers/policy.json", Actions: mine, Source: "spec.nodeDisruptionPolicy.files[0]"},
		{Path: "/etc/containerd/config.toml", Actions: []Action{{Type: ActReboot}}, Source: "spec.nodeDisruptionPolicy.files[1]"},
	}})
	p := user.ForRuntime(RuntimeContainerd)
	for path, want := range map[string]string{
		"/etc/containers/policy.json":          "spec.nodeDisruptionPolicy.files[0]",
		"/etc/containerd/config.toml":          "spec.nodeDisruptionPolicy.files[1]",
		"/etc/containerd/conf.d/a.toml":        SourceContainerdDefault,
		"/etc/containers/registries.d/x.yaml":  SourceContainerdDefault,
		"/etc/kubernetes/credential-providers": "default",
	} {
		if r, ok := p.FileRuleFor(path); !ok || r.Source != want {
			t.Errorf("%s: rule %v (%v), want one from %s", path, r, ok, want)
		}
	}
	if n := strings.Count(DescribeFiles(p), "/etc/containerd/config.toml:"); n != 1 {
		t.Errorf("/etc/containerd/config.toml has %d rules, want 1", n)
	}
	if !reflect.DeepEqual(user.ForRuntime(RuntimeContainerd), p) {
		t.Error("ForRuntime is not the same twice")
	}
	if len(def.Files) != len(DefaultPolicy().Files) || def.Files[2].Actions[0].Unit != CRIOUnit {
		t.Error("ForRuntime changed the policy it was given")
	}
}

// DescribeFiles lists p's file rules one a line.
func DescribeFiles(p Policy) string {
	var b strings.Builder
	for _, r := range p.Files {
		b.WriteString(r.String() + "\n")
	}
	return b.String()
}

// docs/disruption-policy.md's containerd table has each rule of
// ContainerdRules, and no other.
func TestDocumentedContainerdRules(t *testing.T) {
	doc, err := os.ReadFile("../../docs/disruption-policy.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(doc), "## Containerd nodes")
	if i < 0 {
		t.Fatal("docs/disruption-policy.md has no section \"## Containerd nodes\"")
	}
	section := string(doc)[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	rules := ContainerdRules()
	for _, r := range rules {
		actions := DescribeActions(r.Actions)
		row := "| `" + r.Path + "` | " + actions + " | "
		if !strings.Contains(section, row) {
			t.Errorf("the containerd table has no row %q", row)
		}
	}
	if got := strings.Count(section, "\n| `"); got != len(rules) {
		t.Errorf("the containerd table has %d rules, the code %d", got, len(rules))
	}
}
