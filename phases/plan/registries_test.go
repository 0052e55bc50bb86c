package plan

import (
	"strings"
	"testing"
)

// The files of upstream's TestIsDrainRequired (pkg/daemon/drain_test.go in
// openshift/machine-config-operator), written anew: upstream's mc1...mc13,
// by what they hold. Upstream's mc14 is used by no case there.
const (
	// mc1: two registries; the first's mirror is not digest-only, the
	// second's is.
	regMC1 = `
unqualified-search-registries = ["example.com", "foo.com"]

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
`
	// mc2: mc1 with a second digest-only mirror on the second registry.
	regMC2 = regMC1 + `
[[registry.mirror]]
location = "mirror1.com/repo1/test-img1"
pull-from-mirror = "digest-only"
`
	// mc3: mc1's first registry only.
	regMC3 = `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"
[[registry.mirror]]
location = "mirror.com/repo/test-img"
`
	// mc4: one search registry more than mc3; the mirror is digest-only.
	regMC4 = `
unqualified-search-registries = ["example.com", "foo.com", "bar.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"
[[registry.mirror]]
location = "mirror.com/repo/test-img"
pull-from-mirror = "digest-only"
`
	// mc5: mc4 without bar.com in the search list.
	regMC5 = `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"
[[registry.mirror]]
location = "mirror.com/repo/test-img"
pull-from-mirror = "digest-only"
`
	// mc6: mc5 and a second registry without mirrors.
	regMC6 = regMC5 + `
[[registry]]
prefix = ""
location = "example.com/repo1/test-img1"
`
	// mc7: mc6 with a mirror, not digest-only, on the second registry.
	regMC7 = regMC6 + `
[[registry.mirror]]
location = "mirror.com/repo1/test-img1"
`
	// mc8: one registry with prefix bar.com.
	regMC8 = `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = "bar.com"
location = "example.com/repo/test-img"
`
	// mc9: mc8 blocked.
	regMC9 = regMC8 + `blocked = true
`
	// mc10: mc8 without the prefix.
	regMC10 = `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"
`
	// mc11: mc9 and a registry with a digest-only mirror before it.
	regMC11 = `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo1/test-img"
[[registry.mirror]]
location = "mirror.com/repo1/test-img"
pull-from-mirror = "digest-only"

[[registry]]
prefix = "bar.com"
location = "example.com/repo/test-img"
blocked = true
`
	// mc12: a registry with mirror-by-digest-only and one mirror.
	regMC12 = `
unqualified-search-registries = ["example.com", "foo.com"]

[[registry]]
prefix = ""
location = "example.com/repo/test-img"
mirror-by-digest-only = true
[[registry.mirror]]
location = "mirror.com/repo/test-img"
`
	// mc13: mc12 with a second mirror.
	regMC13 = regMC12 + `
[[registry.mirror]]
location = "mirror.com/repo/test-img-13"
`
)

// TestRegistriesChangeUpstream ports every registries.conf case of
// upstream's TestIsDrainRequired; drain there is unsafe != "" here. The
// cases that do not reach the registries.conf check upstream (actions None
// or Reboot) belong to the post-action policy, not to this function: with
// identical files they port to "safe" here.
func TestRegistriesChangeUpstream(t *testing.T) {
	cases := []struct {
		name, old, new string
		unsafe         string // "" for safe, else a part of the reason
	}{
		// upstream case#0 "skip drain: only None action is present" and
		// case#1 "perform drain: reboot action is present" (the drain
		// comes from the reboot): mc1 to mc1.
		{"case#0,1 same file", regMC1, regMC1, ""},
		// upstream case#2 "skip drain: no changes in registry config".
		{"case#2 no change", regMC1, regMC1, ""},
		// upstream case#3 "skip drain: only new registry added with pull-from-mirror=digest-only".
		{"case#3 registry added, digest-only mirror", regMC3, regMC1, ""},
		// upstream case#4 "perform drain: only new registry added with mirror-by-digest-only set to false".
		{"case#4 registry added without digest-only", regMC5, regMC6,
			`registry "example.com/repo1/test-img1" added without mirrors and without mirror-by-digest-only`},
		// upstream case#5 "perform drain: one or more registry has been removed".
		{"case#5 registry removed", regMC1, regMC3, `registry "example.com/repo1/test-img1" removed`},
		// upstream case#6 "skip drain: only new mirrors got added to the registry with pull-from-mirror=digest-only".
		{"case#6 digest-only mirror added", regMC1, regMC2, ""},
		// upstream case#7 "skip drain: only new mirrors are added to registry with
		// pull-from-mirror=digest-only while existing registries with mirror-by-digest-only=false are unchanged".
		{"case#7 registry with digest-only mirror added beside a blocked one", regMC9, regMC11, ""},
		// upstream case#8 "perform drain: only new mirrors got added to the registry with
		// mirror-by-digest-only set to false for registry".
		{"case#8 mirror added, not digest-only", regMC6, regMC7,
			`registry "example.com/repo1/test-img1": mirror "mirror.com/repo1/test-img1" added with pull-from-mirror "all" (not digest-only)`},
		// upstream case#9 "perform drain: one or more mirror has been removed from a registry".
		{"case#9 mirror removed", regMC2, regMC1,
			`registry "example.com/repo1/test-img1": mirror "mirror1.com/repo1/test-img1" removed`},
		// upstream case#10 "perform drain: either item from unqualified-search-registries has been
		// removed or ordering has been changed".
		{"case#10 search registry removed", regMC4, regMC3, `unqualified-search-registries: "bar.com" removed`},
		// upstream case#11 "skip drain: only additional unqualified-search-registries has been added".
		{"case#11 search registry appended", regMC3, regMC4, ""},
		// upstream case#12 "perform drain: prefix value of one or more registry has changed".
		{"case#12 prefix changed", regMC8, regMC10, `registry "bar.com" removed`},
		// upstream case#13 "perform drain: blocked value of one or more registry has changed".
		{"case#13 blocked changed", regMC8, regMC9, `registry "bar.com": blocked changed from false to true`},
		// upstream case#14 "perform drain: mirror-by-digest-only value of one or more registry has
		// changed" (what it trips on is the second registry's mirror, removed).
		{"case#14 mirror removed with the digest-only one", regMC1, regMC6,
			`registry "example.com/repo1/test-img1": mirror "mirror.com/repo1/test-img1" removed`},
		// upstream case#15 "skip drain: only new mirror added to registry with mirror-by-digest-only set to true".
		{"case#15 mirror added under mirror-by-digest-only", regMC12, regMC13, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRegistriesChange(t, c.old, c.new, c.unsafe)
		})
	}
}

// checkRegistriesChange asserts RegistriesChange's verdict: safe when want
// is "", else unsafe with a reason starting with want.
func checkRegistriesChange(t *testing.T, old, new, want string) {
	t.Helper()
	got, err := RegistriesChange([]byte(old), []byte(new))
	if err != nil {
		t.Fatalf("RegistriesChange: %v", err)
	}
	switch {
	case want == "" && got != "":
		t.Errorf("unsafe = %q, want safe", got)
	case want != "" && !strings.HasPrefix(got, want):
		t.Errorf("unsafe = %q, want it to start with %q", got, want)
	}
}

// reg is one [[registry]] entry with the given keys and mirrors.
func reg(keys string, mirrors ...string) string {
	s := "\n[[registry]]\n" + keys + "\n"
	for _, m := range mirrors {
		s += "[[registry.mirror]]\n" + m + "\n"
	}
	return s
}

// TestRegistriesChangeRules covers the cases upstream's tests leave out:
// every rule of docs/registries.md, file added and removed, and each
// deliberate difference from upstream (marked "differs").
func TestRegistriesChangeRules(t *testing.T) {
	quay := `location = "quay.io/openshift"`
	digest := `location = "mirror.example.com/oc"` + "\npull-from-mirror = \"digest-only\""
	all := `location = "mirror.example.com/oc"`
	other := `location = "other.example.com/oc"` + "\npull-from-mirror = \"digest-only\""
	base := reg(quay, digest)
	cases := []struct {
		name, old, new, unsafe string
	}{
		{"file added, empty", "", "", ""},
		{"file added with a digest-only registry", "", base, ""},
		{"file added with search registries", "", `unqualified-search-registries = ["a.io"]`, ""},
		{"file added with a registry not digest-only", "", reg(quay, all),
			`registry "quay.io/openshift" added with mirror "mirror.example.com/oc" pull-from-mirror "all" (not digest-only)`},
		{"file removed", base, "", `registry "quay.io/openshift" removed`},
		{"file removed, search list only", `unqualified-search-registries = ["a.io"]`, "",
			`unqualified-search-registries: "a.io" removed`},
		{"search list reordered", `unqualified-search-registries = ["a.io", "b.io"]`,
			`unqualified-search-registries = ["b.io", "a.io"]`,
			`unqualified-search-registries: order changed ("a.io" moved from position 1)`},
		{"search list: trailing slash is the same registry", `unqualified-search-registries = ["a.io"]`,
			`unqualified-search-registries = ["a.io/", "b.io"]`, ""},
		{"location changed", reg(`prefix = "quay.io/openshift"`+"\n"+quay, digest),
			reg(`prefix = "quay.io/openshift"`+"\n"+`location = "quay.io/other"`, digest),
			`registry "quay.io/openshift": location changed from "quay.io/openshift" to "quay.io/other"`},
		{"insecure changed", base, reg(quay+"\ninsecure = true", digest),
			`registry "quay.io/openshift": insecure changed from false to true`},
		{"mirror made digest-only", reg(quay, all), base, ""},
		{"mirror no longer digest-only", base, reg(quay, all),
			`registry "quay.io/openshift": mirror "mirror.example.com/oc" pull-from-mirror changed from "digest-only" to "all"`},
		{"mirror made tag-only", reg(quay, all), reg(quay, all+"\npull-from-mirror = \"tag-only\""),
			`registry "quay.io/openshift": mirror "mirror.example.com/oc" pull-from-mirror changed from "all" to "tag-only"`},
		{"mirrors reordered", reg(quay, digest, other), reg(quay, other, digest), ""},
		{"two unsafe changes", reg(quay, digest, other), reg(quay + "\nblocked = true"),
			`registry "quay.io/openshift": blocked changed from false to true (and 2 more unsafe changes)`},
		{"other settings unchanged, entries reordered",
			reg(quay, digest) + reg(`location = "b.io"`, digest), reg(`location = "b.io"`, digest) + reg(quay, digest), ""},

		// differs: upstream compares raw strings; we compare what the
		// library uses, so these spellings of the same entry are safe.
		{"differs: prefix spelled out as the location", base,
			reg(`prefix = "quay.io/openshift"`+"\n"+quay, digest), ""},
		{"differs: trailing slash", base, reg(`location = "quay.io/openshift/"`, digest), ""},
		{"differs: pull-from-mirror all spelled out", reg(quay, all), reg(quay, all+"\npull-from-mirror = \"all\""), ""},
		{"differs: the library uses the first entry of a scope", base + reg(quay, all), base + reg(quay, other), ""},
		// differs: a new registry whose mirrors are digest-only through
		// mirror-by-digest-only is safe (upstream wants pull-from-mirror).
		{"differs: registry added with mirror-by-digest-only", "",
			reg(quay+"\nmirror-by-digest-only = true", all), ""},
		// differs: upstream lets these through.
		{"differs: mirror-by-digest-only unset", reg(quay+"\nmirror-by-digest-only = true", all), reg(quay, all),
			`registry "quay.io/openshift": mirror "mirror.example.com/oc" pull-from-mirror changed from "digest-only" to "all"`},
		{"mirror-by-digest-only set", reg(quay, all), reg(quay+"\nmirror-by-digest-only = true", all), ""},
		{"differs: mirror insecure changed", base, reg(quay, digest+"\ninsecure = true"),
			`registry "quay.io/openshift": mirror "mirror.example.com/oc" insecure changed from false to true`},
		{"differs: namespace-proxy changed", base, reg(quay+"\nnamespace-proxy = \"ns\"", digest),
			`registry "quay.io/openshift": namespace-proxy changed`},
		{"differs: mirror namespace-proxy changed", base, reg(quay, digest+"\nnamespace-proxy = \"ns\""),
			`registry "quay.io/openshift": mirror "mirror.example.com/oc" namespace-proxy changed`},
		{"differs: registry added blocked", "", reg(quay + "\nblocked = true\nmirror-by-digest-only = true"),
			`registry "quay.io/openshift" added blocked`},
		{"differs: registry added insecure", "", reg(quay+"\ninsecure = true", digest),
			`registry "quay.io/openshift" added insecure`},
		{"differs: registry added rewriting its prefix", "", reg(`prefix = "quay.io/openshift"`+"\n"+`location = "other.io/x"`, digest),
			`registry "quay.io/openshift" added with location "other.io/x" (pulls rewritten to another location)`},
		{"differs: short-name-mode changed", "", `short-name-mode = "enforcing"`,
			`short-name-mode changed from "" to "enforcing"`},
		{"differs: alias added", "", "[aliases]\nfoo = \"quay.io/foo\"", `short-name alias "foo" added`},
		{"differs: alias changed", "[aliases]\nfoo = \"quay.io/foo\"", "[aliases]\nfoo = \"quay.io/bar\"",
			`short-name alias "foo" changed or removed`},
		{"differs: credential-helpers changed", "", `credential-helpers = ["pass"]`, "credential-helpers changed"},
		{"differs: old file does not parse", "[[registry]\n", base, "the current registries.conf does not parse"},
		{"differs: old file in the v1 format", "[registries.search]\nregistries = []\n", base,
			"the current registries.conf does not parse (the file is in the v1 format"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRegistriesChange(t, c.old, c.new, c.unsafe)
		})
	}
}

// TestRegistriesChangeNewDoesNotParse: upstream fails the update when
// either file does not decode; a desired file that does not is an error here
// too (ValidateRegistriesConf refuses it in the prepare step first).
func TestRegistriesChangeNewDoesNotParse(t *testing.T) {
	for _, bad := range []string{"[[registry]\n", "[[registry]]\ninsecure = \"yes\"\n", "[registries.block]\nregistries = [\"a.io\"]\n"} {
		got, err := RegistriesChange(nil, []byte(bad))
		if err == nil || got != "" {
			t.Errorf("RegistriesChange(nil, %q) = %q, %v; want an error", bad, got, err)
		}
	}
}
