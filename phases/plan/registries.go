package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// RegistriesConfPath is the registries.conf of CRI-O and the container tools.
const RegistriesConfPath = "/etc/containers/registries.conf"

// RegistriesChange decides whether changing registries.conf from old to new is safe for running pods
// as the MCD decides it: unsafe == "" means safe (reload CRI-O, no drain); otherwise unsafe says which
// registry entry (by prefix/location) and what about it made the change unsafe, for the plan and status
// (e.g. `registry "quay.io/openshift": mirror "mirror.example.com/oc" removed`).
//
// A nil or empty old or new stands for an absent file (added or removed),
// which is read as a file without entries, as upstream reads it. Only
// additions that cannot change how a running pod's image is pulled are safe:
// a registry entry whose mirrors are all digest-only, a digest-only mirror,
// unqualified-search registries appended at the end (docs/registries.md has
// every rule and why). When more than one change is unsafe, unsafe names the
// first and counts the others.
//
// err is set only when new does not parse (ValidateRegistriesConf refuses
// such a file earlier). An old file that does not parse is unsafe, not an
// error, so that a config fixing it can still be applied.
func RegistriesChange(old, new []byte) (unsafe string, err error) {
	newConf, err := decodeRegistries(new)
	if err != nil {
		return "", fmt.Errorf("parsing the desired %s: %w", RegistriesConfPath, err)
	}
	oldConf, err := decodeRegistries(old)
	if err != nil {
		return fmt.Sprintf("the current registries.conf does not parse (%v)", err), nil
	}
	reasons := searchChanges(oldConf.UnqualifiedSearchRegistries, newConf.UnqualifiedSearchRegistries)
	reasons = append(reasons, settingChanges(oldConf, newConf)...)
	reasons = append(reasons, registryChanges(oldConf.Registries, newConf.Registries)...)
	switch len(reasons) {
	case 0:
		return "", nil
	case 1:
		return reasons[0], nil
	}
	return fmt.Sprintf("%s (and %s)", reasons[0], Plural(len(reasons)-1, "more unsafe change")), nil
}

// registriesFile is what one registries.conf file decodes to: the v2 format,
// and the v1 format only to tell that a file uses it (the library refuses v1).
type registriesFile struct {
	sysregistriesv2.V2RegistriesConf
	sysregistriesv2.V1RegistriesConf
}

// decodeRegistries decodes a registries.conf in the v2 format with the
// container tools' types and TOML decoder.
func decodeRegistries(data []byte) (sysregistriesv2.V2RegistriesConf, error) {
	var f registriesFile
	if _, err := toml.Decode(string(data), &f); err != nil {
		return sysregistriesv2.V2RegistriesConf{}, err
	}
	if v1 := f.V1TOMLConfig; v1.Search.Registries != nil || v1.Insecure.Registries != nil || v1.Block.Registries != nil {
		return sysregistriesv2.V2RegistriesConf{}, fmt.Errorf("the file is in the v1 format ([registries.search], [registries.insecure], [registries.block]), which the container tools no longer read")
	}
	return f.V2RegistriesConf, nil
}

// searchChanges: short names are tried against the unqualified-search
// registries in order, so the old list must stay the new list's beginning;
// only appended registries are safe.
func searchChanges(old, new []string) []string {
	old, new = trimAll(old), trimAll(new)
	for i, r := range old {
		if i < len(new) && new[i] == r {
			continue
		}
		if slices.Contains(new, r) {
			return []string{fmt.Sprintf("unqualified-search-registries: order changed (%q moved from position %d)", r, i+1)}
		}
		return []string{fmt.Sprintf("unqualified-search-registries: %q removed", r)}
	}
	return nil
}

// settingChanges covers the file's other settings, which upstream does not
// compare: each changes how a pod's image name is resolved or authenticated,
// so any change of them is unsafe.
func settingChanges(old, new sysregistriesv2.V2RegistriesConf) []string {
	var out []string
	if old.ShortNameMode != new.ShortNameMode {
		out = append(out, fmt.Sprintf("short-name-mode changed from %q to %q", old.ShortNameMode, new.ShortNameMode))
	}
	if !slices.Equal(old.CredentialHelpers, new.CredentialHelpers) {
		out = append(out, "credential-helpers changed")
	}
	if old.AdditionalLayerStoreAuthHelper != new.AdditionalLayerStoreAuthHelper {
		out = append(out, "additional-layer-store-auth-helper changed")
	}
	for _, name := range SortedKeys(old.Aliases) {
		if v, ok := new.Aliases[name]; !ok || v != old.Aliases[name] {
			out = append(out, fmt.Sprintf("short-name alias %q changed or removed", name))
		}
	}
	for _, name := range SortedKeys(new.Aliases) {
		if _, ok := old.Aliases[name]; !ok {
			out = append(out, fmt.Sprintf("short-name alias %q added", name))
		}
	}
	return out
}

// registryChanges compares the [[registry]] entries by scope. Removals come
// first, in the old file's order, then changes and additions in the new
// file's order, so the first reason is always the same for the same files.
func registryChanges(oldRegs, newRegs []sysregistriesv2.Registry) []string {
	oldByScope, oldOrder := effectiveRegistries(oldRegs)
	newByScope, newOrder := effectiveRegistries(newRegs)
	var out []string
	for _, scope := range oldOrder {
		if _, ok := newByScope[scope]; !ok {
			out = append(out, fmt.Sprintf("registry %q removed", scope))
		}
	}
	for _, scope := range newOrder {
		n := newByScope[scope]
		if o, ok := oldByScope[scope]; ok {
			out = append(out, changedRegistry(scope, o, n)...)
		} else {
			out = append(out, addedRegistry(scope, n)...)
		}
	}
	return out
}

// effectiveRegistries returns the entries as the library reads them, by
// scope: the prefix, defaulting to the location, without a trailing "/".
// The library uses the first entry of a scope and ignores the others.
func effectiveRegistries(regs []sysregistriesv2.Registry) (map[string]sysregistriesv2.Registry, []string) {
	byScope := make(map[string]sysregistriesv2.Registry, len(regs))
	order := make([]string, 0, len(regs))
	for _, r := range regs {
		r.Location = trimLocation(r.Location)
		r.Prefix = trimLocation(r.Prefix)
		if r.Prefix == "" {
			r.Prefix = r.Location
		}
		if _, dup := byScope[r.Prefix]; dup {
			continue
		}
		byScope[r.Prefix] = r
		order = append(order, r.Prefix)
	}
	return byScope, order
}

// changedRegistry lists what makes a change of one entry unsafe. Where the
// registry's own pulls go (location, namespace proxy), whether they are
// allowed or verified (blocked, insecure), and every mirror that could serve
// them must stay; a mirror may only be added, or move, to digest-only use,
// where a pull by digest gets the same image from any endpoint.
func changedRegistry(scope string, o, n sysregistriesv2.Registry) []string {
	var out []string
	add := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("registry %q: ", scope)+fmt.Sprintf(format, args...))
	}
	if o.Location != n.Location {
		add("location changed from %q to %q", o.Location, n.Location)
	}
	if o.Blocked != n.Blocked {
		add("blocked changed from %t to %t", o.Blocked, n.Blocked)
	}
	if o.Insecure != n.Insecure {
		add("insecure changed from %t to %t", o.Insecure, n.Insecure)
	}
	if o.NamespaceProxy != n.NamespaceProxy {
		add("namespace-proxy changed")
	}
	for _, om := range o.Mirrors {
		if _, ok := findMirror(n.Mirrors, om.Location); !ok {
			add("mirror %q removed", trimLocation(om.Location))
		}
	}
	for _, nm := range n.Mirrors {
		loc := trimLocation(nm.Location)
		om, ok := findMirror(o.Mirrors, nm.Location)
		newMode := mirrorMode(n, nm)
		switch {
		case !ok && newMode != sysregistriesv2.MirrorByDigestOnly:
			add("mirror %q added with pull-from-mirror %q (not digest-only)", loc, newMode)
		case !ok:
		case mirrorMode(o, om) != newMode && newMode != sysregistriesv2.MirrorByDigestOnly:
			add("mirror %q pull-from-mirror changed from %q to %q", loc, mirrorMode(o, om), newMode)
		case om.Insecure != nm.Insecure:
			add("mirror %q insecure changed from %t to %t", loc, om.Insecure, nm.Insecure)
		case om.NamespaceProxy != nm.NamespaceProxy:
			add("mirror %q namespace-proxy changed", loc)
		}
	}
	return out
}

// addedRegistry lists what makes a new entry unsafe. A new entry takes its
// scope's pulls over from whatever served them before, so it is safe only
// when all it brings is digest-only mirrors: no block, no insecure, no
// namespace proxy, no rewrite of the prefix to another location. Without
// mirrors it must set mirror-by-digest-only, as upstream requires.
func addedRegistry(scope string, n sysregistriesv2.Registry) []string {
	var out []string
	add := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("registry %q added ", scope)+fmt.Sprintf(format, args...))
	}
	switch {
	case n.Blocked:
		add("blocked")
	case n.Insecure:
		add("insecure")
	case n.NamespaceProxy != "":
		add("with a namespace-proxy")
	case n.Location != "" && n.Location != n.Prefix:
		add("with location %q (pulls rewritten to another location)", n.Location)
	case len(n.Mirrors) == 0 && !n.MirrorByDigestOnly:
		add("without mirrors and without mirror-by-digest-only")
	}
	for _, m := range n.Mirrors {
		if mode := mirrorMode(n, m); mode != sysregistriesv2.MirrorByDigestOnly {
			add("with mirror %q pull-from-mirror %q (not digest-only)", trimLocation(m.Location), mode)
		}
	}
	return out
}

// mirrorMode is how the library uses the mirror: the registry's
// mirror-by-digest-only makes every mirror digest-only; an empty
// pull-from-mirror means "all".
func mirrorMode(r sysregistriesv2.Registry, m sysregistriesv2.Endpoint) string {
	switch {
	case r.MirrorByDigestOnly:
		return sysregistriesv2.MirrorByDigestOnly
	case m.PullFromMirror == "":
		return sysregistriesv2.MirrorAll
	}
	return m.PullFromMirror
}

// findMirror returns the first mirror at location (trailing "/" ignored).
func findMirror(mirrors []sysregistriesv2.Endpoint, location string) (sysregistriesv2.Endpoint, bool) {
	location = trimLocation(location)
	for _, m := range mirrors {
		if trimLocation(m.Location) == location {
			return m, true
		}
	}
	return sysregistriesv2.Endpoint{}, false
}

// trimLocation drops trailing slashes, as the library does for locations,
// prefixes and search registries.
func trimLocation(s string) string { return strings.TrimRight(s, "/") }

func trimAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = trimLocation(s)
	}
	return out
}
