package plan

import (
	"fmt"
	"strings"
)

// checkUnit says what is wrong with a parsed unit as a whole, if anything:
// sub is the field under the unit's entry (".mask"), msg the problem. It
// refuses what systemd would refuse only after the unit's files are
// written.
func checkUnit(u Unit) (sub, msg string) {
	if len(u.Dropins) > 0 && len(u.Name)+len(".d") > nameMax {
		return ".name", fmt.Sprintf("unit name %.40q... is %d bytes long: the name of its drop-in folder (the unit name and .d) would pass the longest file name Linux accepts, %d (NAME_MAX)",
			u.Name, len(u.Name), nameMax)
	}
	if u.Mask && u.Contents != nil {
		// Masking links the unit's file in /etc/systemd/system to
		// /dev/null; systemd refuses while the daemon's file is there.
		return ".mask", fmt.Sprintf("unit %s is masked and has contents: a masked unit's file is a link to /dev/null, so give one or the other", u.Name)
	}
	if prefix, instance, ok := strings.Cut(strings.TrimSuffix(u.Name, dotExt(u.Name)), "@"); ok && prefix != "" && instance == "" &&
		u.Enabled != nil && *u.Enabled && u.Contents != nil && !hasDefaultInstance(*u.Contents) {
		return ".enabled", fmt.Sprintf("unit %s is a template without DefaultInstance=: systemd can only enable its instances (name one, e.g. %s)",
			u.Name, strings.Replace(u.Name, "@.", "@x.", 1))
	}
	return "", ""
}

// dotExt is the unit type suffix of name (".service").
func dotExt(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

// hasDefaultInstance reports whether unit file contents set DefaultInstance=
// (in their [Install] section, the only one that has it).
func hasDefaultInstance(contents string) bool {
	for _, line := range strings.Split(contents, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.TrimSpace(k) == "DefaultInstance" && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}
