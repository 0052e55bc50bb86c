package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"
)

// registriesValidationCases are registries.conf files and the start of the
// first problem ValidateRegistriesConf reports ("" when it accepts).
func registriesValidationCases() []registriesValidationCase {
	return []registriesValidationCase{
		{"empty", "", ""},
		{"upstream's mc1", regMC1, ""},
		{"upstream's mc11", regMC11, ""},
		{"upstream's mc13", regMC13, ""},
		{"everything valid", `unqualified-search-registries = ["registry.fedoraproject.org", "localhost:5000"]
short-name-mode = "enforcing"
credential-helpers = ["containers-auth.json"]
[[registry]]
prefix = "*.example.com"
[[registry]]
location = "quay.io/openshift/"
insecure = true
[[registry.mirror]]
location = "mirror.example.com:5000/oc"
pull-from-mirror = "tag-only"
[aliases]
"fedora" = "registry.fedoraproject.org/fedora"
"reset" = ""
`, ""},
		{"unknown keys are ignored, as the library does", "[[registry]]\nlocation = \"a.io\"\nfrobnicate = true\n", ""},
		{"TOML syntax", "[[registry]\n", "toml: line 2"},
		{"TOML type", "[[registry]]\nlocation = \"a.io\"\nblocked = \"yes\"\n", "toml: line 3"},
		{"v1 format", "[registries.search]\nregistries = [\"a.io\"]\n", "the file is in the v1 format"},
		{"v1 format, empty list", "[registries.insecure]\nregistries = []\n", "the file is in the v1 format"},
		{"location scheme", "[[registry]]\nlocation = \"https://a.io\"\n",
			`registry[0] (location "https://a.io"): location must not have a URI scheme`},
		{"prefix scheme", "[[registry]]\nprefix = \"http://a.io\"\nlocation = \"a.io\"\n",
			`registry[0] (prefix "http://a.io", location "a.io"): prefix must not have a URI scheme`},
		{"neither set", "[[registry]]\nblocked = true\n", `registry[0] (location ""): neither location nor prefix is set`},
		{"slash only", "[[registry]]\nlocation = \"/\"\n", `registry[0] (location "/"): neither location nor prefix is set`},
		{"prefix without location", "[[registry]]\nprefix = \"a.io\"\n",
			`registry[0] (prefix "a.io"): location is unset and the prefix is not a wildcard`},
		{"wildcard with a path", "[[registry]]\nprefix = \"*.a.io/foo\"\n",
			`registry[0] (prefix "*.a.io/foo"): a wildcard prefix must be a bare domain`},
		{"wildcard location", "[[registry]]\nlocation = \"*.a.io:5000\"\n",
			`registry[0] (location "*.a.io:5000"): a wildcard prefix must be a bare domain`},
		{"pull-from-mirror on the registry", "[[registry]]\nlocation = \"a.io\"\npull-from-mirror = \"all\"\n",
			`registry[0] (location "a.io"): pull-from-mirror is set on the registry itself`},
		{"mirror without location", "[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\ninsecure = true\n",
			`registry[0] (location "a.io"): mirror[0]: location is unset`},
		{"mirror scheme", "[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\nlocation = \"http://m.io\"\n",
			`registry[0] (location "a.io"): mirror[0] (location "http://m.io"): location must not have a URI scheme`},
		{"mirror mode unknown", "[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\npull-from-mirror = \"digest\"\n",
			`registry[0] (location "a.io"): mirror[0] (location "m.io"): pull-from-mirror "digest" is not one of`},
		{"both digest-only settings", "[[registry]]\nlocation = \"a.io\"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"m.io\"\npull-from-mirror = \"digest-only\"\n",
			`registry[0] (location "a.io"): mirror[0] (location "m.io"): pull-from-mirror is set while the registry sets mirror-by-digest-only`},
		{"conflicting insecure", "[[registry]]\nprefix = \"a.io/x\"\nlocation = \"a.io\"\n[[registry]]\nprefix = \"a.io/y\"\nlocation = \"a.io/\"\ninsecure = true\n",
			`registry[1] (prefix "a.io/y", location "a.io/"): insecure conflicts with registry[0]`},
		{"conflicting blocked", "[[registry]]\nprefix = \"a.io/x\"\nlocation = \"a.io\"\n[[registry]]\nprefix = \"a.io/y\"\nlocation = \"a.io\"\nblocked = true\n",
			`registry[1] (prefix "a.io/y", location "a.io"): blocked conflicts with registry[0]`},
		{"duplicate scope, same settings", "[[registry]]\nlocation = \"a.io\"\n[[registry]]\nlocation = \"a.io\"\n", ""},
		{"search registry with a path", `unqualified-search-registries = ["a.io/foo"]`,
			`unqualified-search-registries[0] "a.io/foo" is not a host[:port]`},
		{"search registry with a scheme", `unqualified-search-registries = ["https://a.io"]`,
			`unqualified-search-registries[0] "https://a.io" is not a host[:port]`},
		{"search registry with a trailing slash", `unqualified-search-registries = ["a.io/"]`, ""},
		{"short-name-mode", `short-name-mode = "strict"`, `short-name-mode "strict" is not one of`},
		{"alias name with a registry", "[aliases]\n\"a.io/foo\" = \"a.io/foo\"\n", `aliases: short name "a.io/foo" must not name a registry`},
		{"alias name with a tag", "[aliases]\n\"foo:1\" = \"a.io/foo\"\n", `aliases: short name "foo:1" must not have a tag`},
		{"alias name does not parse", "[aliases]\n\"Foo\" = \"a.io/foo\"\n", `aliases: short name "Foo" does not parse`},
		{"alias value without a registry", "[aliases]\nfoo = \"library/foo\"\n", `aliases: the value of "foo", "library/foo": must name a registry`},
		{"alias value with a digest", "[aliases]\nfoo = \"a.io/foo@sha256:" + strings.Repeat("a", 64) + "\"\n",
			`aliases: the value of "foo", "a.io/foo@sha256:`},
		{"alias value with a tag", "[aliases]\nfoo = \"a.io/foo:1\"\n", `aliases: the value of "foo", "a.io/foo:1": must not have a tag`},
	}
}

type registriesValidationCase struct {
	name, conf, problem string
}

func TestValidateRegistriesConf(t *testing.T) {
	for _, c := range registriesValidationCases() {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Name: "mc", Files: map[string]File{
				RegistriesConfPath: {Field: "spec.config.storage.files[2]", Path: RegistriesConfPath, Contents: []byte(c.conf)},
			}}
			err := ValidateRegistriesConf(cfg)
			if c.problem == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			wantMsg := RegistriesConfPath + ": " + c.problem
			if ce.Object != "mc" || ce.Field != "spec.config.storage.files[2]" || !strings.HasPrefix(ce.Msg, wantMsg) {
				t.Errorf("got %q %q %q, want %q %q and a message starting with %q", ce.Object, ce.Field, ce.Msg, "mc", "spec.config.storage.files[2]", wantMsg)
			}
		})
	}
}

// TestValidateRegistriesConfMatchesLibrary holds ValidateRegistriesConf to
// the library's own verdict: each case's file is loaded by sysregistriesv2
// from disk, as CRI-O loads it.
func TestValidateRegistriesConfMatchesLibrary(t *testing.T) {
	dropIns := t.TempDir()
	for i, c := range registriesValidationCases() {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "registries.conf")
			if err := os.WriteFile(file, []byte(c.conf), 0o600); err != nil {
				t.Fatal(err)
			}
			_, libErr := sysregistriesv2.TryUpdatingCache(&types.SystemContext{
				SystemRegistriesConfPath: file, SystemRegistriesConfDirPath: dropIns})
			problems := registriesProblems([]byte(c.conf))
			if (libErr == nil) != (len(problems) == 0) {
				t.Errorf("case %d: the library says %v; ValidateRegistriesConf says %q", i, libErr, problems)
			}
		})
	}
}

func TestValidateRegistriesConfFiles(t *testing.T) {
	bad := []byte("[[registry]]\nlocation = \"https://a.io\"\n")
	cfg := Config{Name: "mc", Files: map[string]File{
		"/etc/containers/registries.conf.d/99-b.conf": {Field: "f[1]", Contents: bad},
		"/etc/containers/registries.conf.d/10-a.conf": {Field: "f[0]", Contents: bad},
		"/etc/containers/registries.conf.d/README":    {Field: "f[2]", Contents: bad},
		"/etc/containers/registries.d/default.yaml":   {Field: "f[3]", Contents: bad},
		RegistriesConfPath:                            {Field: "f[4]", Digest: &Digest{}},
	}}
	err := ValidateRegistriesConf(cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *ConfigError", err)
	}
	if ce.Field != "f[0]" || ce.More != 1 || ce.Others[0].Field != "f[1]" {
		t.Errorf("got %v (field %q, more %d), want f[0] first and f[1] after it", err, ce.Field, ce.More)
	}
}
