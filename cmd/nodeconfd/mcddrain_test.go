package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/osupdate"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// policyCases port upstream's node disruption policy tests: the closest
// path match (pkg/daemon/update_test.go TestFindClosestFilePolicyPathMatch)
// and the e2e TestNodeDisruptionPolicies and
// TestNodeDisruptionPolicySpecialAction (test/e2e-2of2/nodedisrupt_test.go).
func policyCases() []mcdCase {
	const u = "TestFindClosestFilePolicyPathMatch: "
	rules := func(kv ...string) string {
		var b strings.Builder
		b.WriteString("nodeDisruptionPolicy:\n  files:\n")
		for i := 0; i+1 < len(kv); i += 2 {
			fmt.Fprintf(&b, "  - {path: %s, actions: [%s]}\n", kv[i], kv[i+1])
		}
		return b.String()
	}
	const none, reboot, reload = "{type: None}", "{type: Reboot}", "{type: Reload, reload: {serviceName: crio.service}}"
	nested := rules("/etc/mco/f1", none, "/etc/mco/f1/f2", reboot, "/etc/mco/f1/f2/f3", reload)
	cases := []mcdCase{
		{name: u + "case#0 no policy for the file", new: files("/etc/mco/test", "x"), policy: rules("/etc/example", none), want: wantReboot},
		{name: u + "case#1 an exact path", new: files("/etc/mco/test1", "x"),
			policy: rules("/etc/mco/test1", none, "/etc/mco/test2", reboot), want: wantNone},
		{name: u + "case#2 the closest folder", new: files("/etc/mco/f1/f2/example", "x"), policy: nested, want: wantReboot},
		{name: u + "case#3 an exact match among folders", new: files("/etc/mco/f1/f2/f3", "x"), policy: nested,
			want: crio(false, "Reload crio.service")},
		{name: u + "case#4 a partial parent match is none", new: files("/etc/mco/f1/f2/f3", "x"),
			policy: rules("/etc/mco/f1/test", none, "/etc/mco/f1/f2/test", reboot, "/etc/mco/f1/f2/f3/f4", reload), want: wantReboot},
	}
	// The e2e test's action sets, each through a file, a unit and the SSH
	// keys, applied and then removed again.
	actions := []struct {
		name, yaml string
		want       mcdWant
	}{
		{"None", none, wantNone},
		{"Drain", "{type: Drain}", mcdWant{kind: "None", actions: []string{"Drain"}, drain: true}},
		{"Reboot", reboot, wantReboot},
		{"DaemonReload", "{type: DaemonReload}", mcdWant{kind: "DaemonReload", actions: []string{"DaemonReload"}}},
		{"Restart", "{type: Restart, restart: {serviceName: crio.service}}", crio(false, "Restart crio.service")},
		{"Reload", reload, crio(false, "Reload crio.service")},
	}
	const e = "TestNodeDisruptionPolicies: "
	for _, a := range actions {
		file := "/etc/test-" + a.name
		unit := a.name + "-test.service"
		// Upstream's unit holds "test"; a unit file systemd can read here.
		withUnit := mcdConfig{units: []map[string]any{{"name": unit, "contents": "[Unit]\nDescription=test\n"}}}
		unitPolicy := fmt.Sprintf("nodeDisruptionPolicy:\n  units:\n  - {name: %s, actions: [%s]}\n", unit, a.yaml)
		sshPolicy := fmt.Sprintf("nodeDisruptionPolicy:\n  sshkey: {actions: [%s]}\n", a.yaml)
		cases = append(cases,
			mcdCase{name: e + "testFilePolicy " + a.name, new: files(file, "test\n"), policy: rules(file, a.yaml), want: a.want},
			mcdCase{name: e + "testFilePolicy " + a.name + " removed", old: files(file, "test\n"), policy: rules(file, a.yaml), want: a.want},
			mcdCase{name: e + "testUnitPolicy " + a.name, new: withUnit, policy: unitPolicy, want: a.want},
			mcdCase{name: e + "testUnitPolicy " + a.name + " removed", old: withUnit, policy: unitPolicy, want: a.want},
			mcdCase{name: e + "testSSHKeyPolicy " + a.name, new: mcdConfig{users: core("test")}, policy: sshPolicy, want: a.want},
		)
	}
	const sp = "TestNodeDisruptionPolicySpecialAction: "
	base, added := files(registriesPath, registries1), files(registriesPath, "unqualified-search-registries = [\"a.io\", \"test.io\"]\n")
	return append(cases,
		mcdCase{name: sp + "a search registry added: reload, no drain", old: base, new: added, want: crio(false, "Special")},
		mcdCase{name: sp + "the search registry removed: reload and drain", old: added, new: base, want: crio(true, "Special")})
}

// registries.conf contents of TestIsDrainRequired (pkg/daemon/drain_test.go),
// by upstream's MachineConfig name.
var drainRegistries = map[string]string{
	"mc1": `unqualified-search-registries = ["example.com", "foo.com"]
[[registry]]
  prefix = ""
  location = "example.com/repo/test-img"
  [[registry.mirror]]
    location = "mirror.com/repo/test-img"
[[registry]]
  prefix = ""
  location = "example.com/repo1/test-img1"
  [[registry.mirror]]
    location = "mirror.com/repo1/test-img1"
	pull-from-mirror= "digest-only"
`,
	"mc2": `unqualified-search-registries = ["example.com", "foo.com"]
[[registry]]
prefix = ""
location = "example.com/repo/test-img"
[[registry.mirror]]
	location = "mirror.com/repo/test-img"
[[registry]]
prefix = ""
location = "example.com/repo1/test-img1"
[[registry.mirror]]
	location = "mirror.com/repo1/test-img1"
	pull-from-mirror = "digest-only"
[[registry.mirror]]
	location = "mirror1.com/repo1/test-img1"
	pull-from-mirror = "digest-only"
`,
	"mc3": drainRegistry(`["example.com", "foo.com"]`, "", "example.com/repo/test-img", false, "mirror.com/repo/test-img", ""),
	"mc4": drainRegistry(`["example.com", "foo.com", "bar.com"]`, "", "example.com/repo/test-img", false, "mirror.com/repo/test-img", "digest-only"),
	"mc5": drainRegistry(`["example.com", "foo.com"]`, "", "example.com/repo/test-img", false, "mirror.com/repo/test-img", "digest-only"),
	"mc6": drainRegistry(`["example.com", "foo.com"]`, "", "example.com/repo/test-img", false, "mirror.com/repo/test-img", "digest-only") +
		"[[registry]]\nprefix = \"\"\nlocation = \"example.com/repo1/test-img1\"\n",
	"mc7": drainRegistry(`["example.com", "foo.com"]`, "", "example.com/repo/test-img", false, "mirror.com/repo/test-img", "digest-only") +
		"[[registry]]\nprefix = \"\"\nlocation = \"example.com/repo1/test-img1\"\n[[registry.mirror]]\nlocation = \"mirror.com/repo1/test-img1\"\n",
	"mc8":  drainRegistry(`["example.com", "foo.com"]`, "bar.com", "example.com/repo/test-img", false, "", ""),
	"mc9":  drainRegistry(`["example.com", "foo.com"]`, "bar.com", "example.com/repo/test-img", false, "", "") + "blocked = true\n",
	"mc10": drainRegistry(`["example.com", "foo.com"]`, "", "example.com/repo/test-img", false, "", ""),
	"mc11": drainRegistry(`["example.com", "foo.com"]`, "", "example.com/repo1/test-img", false, "mirror.com/repo1/test-img", "digest-only") +
		"[[registry]]\nprefix = \"bar.com\"\nlocation = \"example.com/repo/test-img\"\nblocked = true\n",
	"mc12": drainRegistry(`["example.com", "foo.com"]`, "", "example.com/repo/test-img", true, "mirror.com/repo/test-img", ""),
	"mc13": drainRegistry(`["example.com", "foo.com"]`, "", "example.com/repo/test-img", true, "mirror.com/repo/test-img", "") +
		"[[registry.mirror]]\nlocation = \"mirror.com/repo/test-img-13\"\n",
}

// drainRegistry is a registries.conf with one registry and at most one
// mirror, in the shape most of TestIsDrainRequired's configs have.
func drainRegistry(search, prefix, location string, digestOnly bool, mirror, pullFrom string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "unqualified-search-registries = %s\n[[registry]]\nprefix = %q\nlocation = %q\n", search, prefix, location)
	if digestOnly {
		b.WriteString("mirror-by-digest-only = true\n")
	}
	if mirror != "" {
		fmt.Fprintf(&b, "[[registry.mirror]]\nlocation = %q\n", mirror)
	}
	if pullFrom != "" {
		fmt.Fprintf(&b, "pull-from-mirror = %q\n", pullFrom)
	}
	return b.String()
}

// registriesDrainCases port TestIsDrainRequired: registries.conf takes the
// Special action, and drains only when the change is unsafe for running pods.
func registriesDrainCases() []mcdCase {
	reg := func(name string) mcdConfig { return files(registriesPath, drainRegistries[name]) }
	const u = "TestIsDrainRequired: "
	withImage := reg("mc1")
	withImage.osImage = mcdImage1
	cases := []mcdCase{
		{name: u + "case#0 skip drain: only None", old: reg("mc1"), new: reg("mc1"), want: wantNone},
		{name: u + "case#1 drain: a reboot", old: reg("mc1"), new: withImage, want: wantReboot},
		{name: u + "case#2 skip drain: no change to registries", old: reg("mc1"), new: reg("mc1"), want: wantNone},
	}
	for i, c := range []struct {
		old, new, why string
		drain         bool
	}{
		{"mc3", "mc1", "only a new registry with pull-from-mirror=digest-only", false},
		{"mc5", "mc6", "a new registry with mirror-by-digest-only false", true},
		{"mc1", "mc3", "a registry removed", true},
		{"mc1", "mc2", "only new mirrors with pull-from-mirror=digest-only", false},
		{"mc9", "mc11", "new digest-only mirrors, other registries unchanged", false},
		{"mc6", "mc7", "a new mirror of a registry not digest-only", true},
		{"mc2", "mc1", "a mirror removed", true},
		{"mc4", "mc3", "a search registry removed or reordered", true},
		{"mc3", "mc4", "only a search registry added", false},
		{"mc8", "mc10", "a prefix changed", true},
		{"mc8", "mc9", "blocked changed", true},
		{"mc1", "mc6", "mirror-by-digest-only changed", true},
		{"mc12", "mc13", "only a new mirror of a mirror-by-digest-only registry", false},
	} {
		verb := "skip drain"
		if c.drain {
			verb = "drain"
		}
		cases = append(cases, mcdCase{name: fmt.Sprintf("%scase#%d %s: %s (%s to %s)", u, i+3, verb, c.why, c.old, c.new),
			old: reg(c.old), new: reg(c.new), want: crio(c.drain, "Special")})
	}
	return cases
}

// TestMCDKernelArguments ports TestKernelAguments (pkg/daemon/update_test.go):
// upstream deletes every old argument and appends every new one, so the
// node ends up with the new arguments in their order. A change reboots,
// and the report's edit, made as rpm-ostree makes it (osupdate.ApplyKargs),
// leaves the new arguments in their order.
func TestMCDKernelArguments(t *testing.T) {
	for i, c := range []struct {
		old, new []string
	}{
		{old: nil, new: []string{"hello=world"}},
		{old: []string{"hello=world"}, new: nil},
		{old: []string{"foo", "bar=1", "hello=world"}, new: []string{"hello=world"}},
		{old: []string{"foo", "bar=1 hello=world", "baz"}, new: []string{"foo", "bar=1", "hello=world"}},
		{old: []string{` baz=test bar="hello world"`}, new: []string{` baz=test bar="hello world"`, "foo"}},
		{old: []string{"hugepagesz=1G hugepages=4", "hugepagesz=2M hugepages=4"},
			new: []string{"hugepagesz=1G hugepages=4", "hugepagesz=2M hugepages=6"}},
	} {
		t.Run(fmt.Sprintf("case#%d", i), func(t *testing.T) {
			r, code := planMCD(t, mcdCase{old: mcdConfig{kargs: c.old}, new: mcdConfig{kargs: c.new}, want: wantReboot})
			checkMCD(t, mcdCase{want: wantReboot}, r, code)
			if r.KernelArgs == nil {
				t.Fatalf("no kernel argument edit in the report")
			}
			got := osupdate.ApplyKargs(splitKargs(t, c.old), r.KernelArgs.Removed, r.KernelArgs.Added)
			want := splitKargs(t, c.new)
			if !slices.Equal(got, want) {
				t.Errorf("edit -%q +%q makes %q; want %q", r.KernelArgs.Removed, r.KernelArgs.Added, got, want)
			}
		})
	}
}

func splitKargs(t *testing.T, entries []string) []string {
	var out []string
	for _, e := range entries {
		args, ok := plan.SplitKernelArgs(e)
		if !ok {
			t.Fatalf("unbalanced quote in %q", e)
		}
		out = append(out, args...)
	}
	return out
}
