package plan

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// checkPath says what is wrong with a file path, if anything.
func checkPath(p string) string {
	switch {
	case p == "":
		return "path is empty"
	case !path.IsAbs(p):
		return fmt.Sprintf("path %q is not absolute", p)
	case path.Clean(p) != p:
		return fmt.Sprintf("path %q is not clean (want %q)", p, path.Clean(p))
	case p == "/":
		return "path is the root directory"
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return fmt.Sprintf("path %q has a .. element", p)
		}
	}
	return checkPathSafety(p)
}

// unitTypes lists the unit types Ignition accepts, for messages.
// systemd dropped .snapshot units (v228): Ignition still takes the name,
// but systemd refuses it, so the daemon does too.
const unitTypes = ".service, .socket, .device, .mount, .automount, .swap, .target, .path, .timer, .slice, .scope"

// checkUnitName says what is wrong with a unit name, if anything: it must be
// prefix[@instance].type, with systemd's characters only.
func checkUnitName(name string) string {
	if len(name) > nameMax {
		return fmt.Sprintf("unit name %.40q... is %d bytes long; systemd takes at most %d", name, len(name), nameMax)
	}
	ext := path.Ext(name)
	if ext == "" || !slices.Contains(strings.Split(unitTypes, ", "), ext) {
		return fmt.Sprintf("unit name %q does not end in a unit type (%s)", name, unitTypes)
	}
	prefix, instance, _ := strings.Cut(strings.TrimSuffix(name, ext), "@")
	if prefix == "" {
		return fmt.Sprintf("unit name %q has an empty prefix", name)
	}
	if !unitChars(prefix) || !unitChars(instance) {
		return fmt.Sprintf("unit name %q has characters other than letters, digits and :-_.\\ (and one @)", name)
	}
	return ""
}

// unitChars reports whether s only has characters systemd allows in unit names.
func unitChars(s string) bool {
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(":-_.\\", r)
		if !ok {
			return false
		}
	}
	return true
}

// checkDropinName says what is wrong with a drop-in file name, if anything.
func checkDropinName(name string) string {
	if msg := checkText("drop-in name", name); msg != "" {
		return msg
	}
	switch {
	case len(name) > nameMax:
		return fmt.Sprintf("drop-in name %.40q... is %d bytes long; the longest file name Linux accepts is %d (NAME_MAX)", name, len(name), nameMax)
	case path.Ext(name) != ".conf":
		return fmt.Sprintf("drop-in name %q does not end in .conf", name)
	case name == ".conf" || strings.HasPrefix(name, "."):
		return fmt.Sprintf("drop-in name %q is hidden or empty", name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Sprintf("drop-in name %q is not a plain file name", name)
	}
	return ""
}
