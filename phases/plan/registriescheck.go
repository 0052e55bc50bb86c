package plan

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// RegistriesDropInDir holds registries.conf drop-ins, read after the main
// file in name order; the library reads the *.conf files there.
const RegistriesDropInDir = "/etc/containers/registries.conf.d/"

// ValidateRegistriesConf checks the config's registries.conf and its
// registries.conf.d drop-ins the way the container tools' library loads
// each file: a file the library would refuse (a TOML or type error, the v1
// format, an entry it finds inconsistent) would make CRI-O's reload fail,
// so the prepare step refuses the config before anything is touched. The
// error is a *ConfigError naming the MachineConfig, the file's entry and
// the offending registries.conf entry. Upstream does not check the file at
// all; it only fails the update when the file does not parse as TOML and
// registries.conf changed (docs/registries.md).
//
// The library reads the files on disk, so its checks are redone here on
// the decoded file; TestValidateRegistriesConfMatchesLibrary holds the two
// to the same verdicts. Conflicts between files (merged by the library
// entry by entry) are not checked.
func ValidateRegistriesConf(cfg Config) error {
	var problems []*ConfigError
	for _, p := range SortedKeys(cfg.Files) {
		f := cfg.Files[p]
		if !IsRegistriesFile(p) || f.Digest != nil {
			continue
		}
		for _, msg := range registriesProblems(f.Contents) {
			problems = append(problems, &ConfigError{Object: cfg.Name, Field: f.Field,
				Msg: fmt.Sprintf("%s: %s", p, msg)})
		}
	}
	if len(problems) == 0 {
		return nil
	}
	first := *problems[0]
	first.More = len(problems) - 1
	first.Others = problems[1:]
	return &first
}

// IsRegistriesFile reports whether p is registries.conf or one of its drop-ins.
func IsRegistriesFile(p string) bool {
	return p == RegistriesConfPath ||
		(path.Dir(p)+"/" == RegistriesDropInDir && strings.HasSuffix(p, ".conf"))
}

// registriesProblems lists what the library refuses in one file, in the
// order it checks.
func registriesProblems(data []byte) []string {
	conf, err := decodeRegistries(data)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for i, r := range conf.Registries {
		out = append(out, registryProblems(fmt.Sprintf("registry[%d]", i), r)...)
	}
	out = append(out, registryConflicts(conf.Registries)...)
	out = append(out, searchProblems(conf.UnqualifiedSearchRegistries)...)
	switch conf.ShortNameMode {
	case "", "disabled", "enforcing", "permissive":
	default:
		out = append(out, fmt.Sprintf("short-name-mode %q is not one of disabled, enforcing, permissive", conf.ShortNameMode))
	}
	for _, name := range SortedKeys(conf.Aliases) {
		out = append(out, aliasProblems(name, conf.Aliases[name])...)
	}
	return out
}

// registryProblems checks one [[registry]] entry and its mirrors.
func registryProblems(entry string, r sysregistriesv2.Registry) []string {
	var out []string
	add := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("%s (%s): ", entry, describeRegistry(r))+fmt.Sprintf(format, args...))
	}
	loc, prefix := trimLocation(r.Location), trimLocation(r.Prefix)
	if hasScheme(loc) {
		add("location must not have a URI scheme")
	}
	switch {
	case prefix == "" && loc == "":
		add("neither location nor prefix is set")
	case hasScheme(prefix):
		add("prefix must not have a URI scheme")
	case prefix != "" && loc == "" && !strings.HasPrefix(prefix, "*."):
		add("location is unset and the prefix is not a wildcard (*.example.com)")
	}
	if prefix == "" {
		prefix = loc
	}
	if strings.HasPrefix(prefix, "*.") && strings.ContainsAny(prefix, "/@:") {
		add("a wildcard prefix must be a bare domain (*.example.com)")
	}
	if r.PullFromMirror != "" {
		add("pull-from-mirror is set on the registry itself (only mirrors take it)")
	}
	for j, m := range r.Mirrors {
		mloc := trimLocation(m.Location)
		where := fmt.Sprintf("mirror[%d]", j)
		switch {
		case hasScheme(mloc):
			add("%s (location %q): location must not have a URI scheme", where, m.Location)
		case mloc == "":
			add("%s: location is unset", where)
		}
		switch m.PullFromMirror {
		case "", sysregistriesv2.MirrorAll, sysregistriesv2.MirrorByDigestOnly, sysregistriesv2.MirrorByTagOnly:
		default:
			add("%s (location %q): pull-from-mirror %q is not one of all, digest-only, tag-only", where, mloc, m.PullFromMirror)
		}
		if r.MirrorByDigestOnly && m.PullFromMirror != "" {
			add("%s (location %q): pull-from-mirror is set while the registry sets mirror-by-digest-only", where, mloc)
		}
	}
	return out
}

// registryConflicts: entries for one location (by prefix when they have
// none) must agree on insecure and blocked.
func registryConflicts(regs []sysregistriesv2.Registry) []string {
	type seen struct {
		entry             int
		insecure, blocked bool
	}
	first := map[string]seen{}
	var out []string
	for i, r := range regs {
		key := trimLocation(r.Location)
		if key == "" {
			key = trimLocation(r.Prefix)
		}
		s, ok := first[key]
		switch {
		case !ok:
			first[key] = seen{i, r.Insecure, r.Blocked}
		case s.insecure != r.Insecure:
			out = append(out, fmt.Sprintf("registry[%d] (%s): insecure conflicts with registry[%d] for the same location", i, describeRegistry(r), s.entry))
		case s.blocked != r.Blocked:
			out = append(out, fmt.Sprintf("registry[%d] (%s): blocked conflicts with registry[%d] for the same location", i, describeRegistry(r), s.entry))
		}
	}
	return out
}

// searchProblems: each unqualified-search registry must be a bare host[:port].
func searchProblems(list []string) []string {
	domain := regexp.MustCompile("^" + reference.DomainRegexp.String() + "$")
	var out []string
	for i, s := range list {
		if t := trimLocation(s); hasScheme(t) || !domain.MatchString(t) {
			out = append(out, fmt.Sprintf("unqualified-search-registries[%d] %q is not a host[:port]", i, s))
		}
	}
	return out
}

// aliasProblems: an alias maps a short name (no registry, tag or digest)
// to a fully qualified repository (a registry, no tag or digest); an empty
// value resets the alias.
func aliasProblems(name, value string) []string {
	var out []string
	if ref, err := reference.Parse(name); err != nil {
		out = append(out, fmt.Sprintf("aliases: short name %q does not parse: %v", name, err))
	} else if msg := refShape(ref, false); msg != "" {
		out = append(out, fmt.Sprintf("aliases: short name %q %s", name, msg))
	}
	if value == "" {
		return out
	}
	ref, err := reference.Parse(value)
	if err == nil {
		if msg := refShape(ref, true); msg != "" {
			err = fmt.Errorf("%s", msg)
		} else {
			_, err = reference.ParseNormalizedNamed(value)
		}
	}
	if err != nil {
		out = append(out, fmt.Sprintf("aliases: the value of %q, %q: %v", name, value, err))
	}
	return out
}

// refShape says what is wrong with an alias's name (qualified false) or
// value (qualified true), or "".
func refShape(ref reference.Reference, qualified bool) string {
	if _, ok := ref.(reference.Digested); ok {
		return "must not have a digest"
	}
	if _, ok := ref.(reference.Tagged); ok {
		return "must not have a tag"
	}
	named, ok := ref.(reference.Named)
	if !ok {
		return "has no name"
	}
	domain := reference.Domain(named)
	hasRegistry := strings.ContainsAny(domain, ".:") || domain == "localhost"
	switch {
	case qualified && !hasRegistry:
		return "must name a registry and a repository"
	case !qualified && hasRegistry:
		return "must not name a registry"
	}
	return ""
}

func hasScheme(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// describeRegistry names an entry by its prefix and location, as set.
func describeRegistry(r sysregistriesv2.Registry) string {
	switch {
	case r.Prefix != "" && r.Location != "":
		return fmt.Sprintf("prefix %q, location %q", r.Prefix, r.Location)
	case r.Prefix != "":
		return fmt.Sprintf("prefix %q", r.Prefix)
	}
	return fmt.Sprintf("location %q", r.Location)
}
