package plan

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits of Linux file names: NAME_MAX bytes per element, and PATH_MAX
// bytes for a whole path including its terminating NUL.
const (
	nameMax = 255
	pathMax = 4096
)

// stateDir is the daemon's own state folder on the node (see daemon/hostfs):
// a config must never write its backups, journals or records.
const stateDir = "/var/lib/nodeconfd"

// pseudoFSDirs hold the kernel's pseudo file systems: writing there changes
// kernel or device state at once, is never a file, and cannot be backed up.
func pseudoFSDirs() []string { return []string{"/proc", "/sys", "/dev"} }

// checkPathSafety says what is wrong with a clean absolute path beyond its
// form: characters a terminal, a log or a shell would misread, names the
// kernel refuses, and folders the config must not write into.
func checkPathSafety(p string) string {
	if msg := checkText("path", p); msg != "" {
		return msg
	}
	if len(p) >= pathMax {
		return fmt.Sprintf("path is %d bytes long; the longest Linux accepts is %d (PATH_MAX %d with its NUL)", len(p), pathMax-1, pathMax)
	}
	for _, el := range strings.Split(p[1:], "/") {
		if len(el) > nameMax {
			return fmt.Sprintf("path element %.40q... is %d bytes long; the longest file name Linux accepts is %d (NAME_MAX)", el, len(el), nameMax)
		}
	}
	for _, dir := range pseudoFSDirs() {
		if within(p, dir) {
			return fmt.Sprintf("path %q is in %s, a kernel pseudo file system, not a place for files", p, dir)
		}
	}
	if within(p, stateDir) {
		return fmt.Sprintf("path %q is in %s, the daemon's own state folder", p, stateDir)
	}
	for _, dir := range volatileDirs() {
		if within(p, dir) {
			return fmt.Sprintf("path %q is in %s, which is emptied at every boot: the file would be gone after the next reboot and the node would never match its config again", p, dir)
		}
	}
	for _, dir := range ostreeDirs() {
		if within(p, dir) {
			return fmt.Sprintf("path %q is in %s, where ostree keeps the OS deployments: only the OS updater writes there", p, dir)
		}
	}
	return ""
}

// CheckNodePath says what is wrong with writing the clean absolute path p
// that the node gives rather than the config (a user's SSH key file, under
// its home from /etc/passwd): the folders refused for a config's file are
// refused for it too.
func CheckNodePath(p string) string { return checkPathSafety(p) }

// volatileDirs are tmpfs folders (/var/run links to /run).
func volatileDirs() []string { return []string{"/run", "/var/run"} }

// ostreeDirs hold an ostree host's physical root and its repository.
func ostreeDirs() []string { return []string{"/sysroot", "/ostree"} }

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// checkText says what is wrong with a name (what: "path", "drop-in name";
// "" leaves the name out of the message)
// that must be valid UTF-8 without control characters (C0, DEL, C1) or
// Unicode bidirectional controls, which make names print as something else.
func checkText(what, s string) string {
	subject := ""
	if what != "" {
		subject = fmt.Sprintf("%s %q ", what, s)
	}
	if !utf8.ValidString(s) {
		return subject + "is not valid UTF-8"
	}
	for i, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return fmt.Sprintf("%shas the control character %U at byte %d", subject, r, i)
		}
		if isBidiControl(r) {
			return fmt.Sprintf("%shas the bidirectional control %U at byte %d", subject, r, i)
		}
	}
	return ""
}

// isBidiControl reports whether r is one of Unicode's explicit
// bidirectional formatting characters (ALM, LRM, RLM, LRE..RLO, LRI..PDI).
func isBidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
