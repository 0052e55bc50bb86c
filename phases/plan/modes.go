package plan

import (
	"io/fs"

	"github.com/coreos/go-semver/semver"
)

// specialBits are setuid, setgid and sticky in Ignition's raw form.
const specialBits = 0o7000

// keepsSpecialBits reports whether a config of Ignition spec v sets the
// setuid, setgid and sticky bits of its files. Ignition applies them from
// spec 3.6.0 on only: for the earlier specs it warns and masks them when it
// translates the config (config/v3_6_experimental/translate, since
// Ignition 2.22), so that a file an earlier Ignition installed 0755 never
// turns setuid root when a node applies the same config again. (A Go
// fs.FileMode built from the raw value, as machine-config-daemon builds
// it, drops them as well.)
func keepsSpecialBits(v semver.Version) bool {
	return v.Major > 3 || (v.Major == 3 && v.Minor >= 6)
}

// fileMode is the mode a file of a spec-v config lands with.
func fileMode(v semver.Version, raw int) fs.FileMode {
	if !keepsSpecialBits(v) {
		raw &^= specialBits
	}
	return fs.FileMode(raw)
}
