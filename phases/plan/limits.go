package plan

import (
	"fmt"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// Default size caps. A MachineConfig object is at most about 1.5 MiB (etcd's
// request limit), but gzip contents decode to up to about 1,000 times their
// size: without caps, 1.4 MiB of gzip bombs decode to a gigabyte at every
// parse. Real configs hold text (unit files, kubelet and CRI-O settings,
// certificates) far below these caps; the largest files MCO itself renders
// are well under a megabyte.
const (
	// DefaultMaxFileSize caps one file's decoded contents, appends included.
	DefaultMaxFileSize = 16 << 20
	// DefaultMaxConfigSize caps the decoded total of one config: its files,
	// unit contents, drop-ins and SSH keys. The daemon holds two configs
	// (current and desired) while it plans an update.
	DefaultMaxConfigSize = 64 << 20
)

// Default count caps. A MachineConfig object of 1.5 MiB holds up to about
// 27,000 files, and a path of 4,095 bytes up to 2,047 folders, each of
// which the daemon walks, checks and may create while the node is drained.
// Real rendered configs hold tens of files (MCO's own worker config about
// 60) and paths of under 12 elements; OpenShift's operators add tens more.
const (
	// DefaultMaxFiles caps a config's storage.files entries.
	DefaultMaxFiles = 4096
	// DefaultMaxUnits caps a config's systemd units plus their drop-ins.
	DefaultMaxUnits = 2048
	// DefaultMaxPathDepth caps the elements of a file's path (/etc/a is 2).
	DefaultMaxPathDepth = 64
)

// Limits caps the decoded size of a config's contents, and the count of its
// files, units and path elements. Decoding is streamed and stops one byte
// past a cap, so a config over a cap costs no more than the cap to refuse;
// counts are checked before any entry is looked at. The zero value means
// the defaults.
type Limits struct {
	// MaxFileSize caps one file's decoded contents, appends included; 0
	// means DefaultMaxFileSize.
	MaxFileSize int64
	// MaxConfigSize caps the decoded total of the files, unit contents,
	// drop-ins and SSH keys of one config; 0 means DefaultMaxConfigSize.
	MaxConfigSize int64
	// MaxFiles caps the storage.files entries; 0 means DefaultMaxFiles.
	MaxFiles int
	// MaxUnits caps the systemd units plus their drop-ins; 0 means
	// DefaultMaxUnits.
	MaxUnits int
	// MaxPathDepth caps the elements of a file's path; 0 means
	// DefaultMaxPathDepth.
	MaxPathDepth int
}

// DefaultLimits returns every cap at its default.
func DefaultLimits() Limits { return Limits{}.withDefaults() }

// withDefaults fills the zero caps.
func (l Limits) withDefaults() Limits {
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxConfigSize <= 0 {
		l.MaxConfigSize = DefaultMaxConfigSize
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxUnits <= 0 {
		l.MaxUnits = DefaultMaxUnits
	}
	if l.MaxPathDepth <= 0 {
		l.MaxPathDepth = DefaultMaxPathDepth
	}
	return l
}

// Check reports caps that make no sense: negative, or a file cap above the
// config cap.
func (l Limits) Check() error {
	if l.MaxFileSize < 0 || l.MaxConfigSize < 0 {
		return fmt.Errorf("size caps must not be negative (file %d, config %d)", l.MaxFileSize, l.MaxConfigSize)
	}
	if l.MaxFiles < 0 || l.MaxUnits < 0 || l.MaxPathDepth < 0 {
		return fmt.Errorf("count caps must not be negative (files %d, units %d, path depth %d)", l.MaxFiles, l.MaxUnits, l.MaxPathDepth)
	}
	if d := l.withDefaults(); d.MaxFileSize > d.MaxConfigSize {
		return fmt.Errorf("the file size cap (%s) exceeds the config size cap (%s)", sizeString(d.MaxFileSize), sizeString(d.MaxConfigSize))
	}
	return nil
}

// Parse parses and validates a rendered MachineConfig with the default
// size caps; see ParseWithLimits.
func Parse(mc *mcfgv1.MachineConfig) (Config, error) {
	return ParseWithLimits(mc, Limits{})
}

// budget is what is left of the config size cap while one config is parsed.
type budget struct {
	limits Limits
	used   int64
}

// left returns how many more decoded bytes the config may hold.
func (b *budget) left() int64 { return b.limits.MaxConfigSize - b.used }

// counts refuses a config with more files or units than the caps, before
// any entry is checked: checking costs time for each, and writing costs
// more while the node is drained. It reports whether the counts fit.
func (p *parser) counts(c types.Config) bool {
	lim := p.size.limits
	ok := true
	if n := len(c.Storage.Files); n > lim.MaxFiles {
		p.add("spec.config.storage.files", "%d files, over the cap of %d (--max-files)", n, lim.MaxFiles)
		ok = false
	}
	n := len(c.Systemd.Units)
	for _, u := range c.Systemd.Units {
		n += len(u.Dropins)
	}
	if n > lim.MaxUnits {
		p.add("spec.config.systemd.units", "%d units and drop-ins, over the cap of %d (--max-units)", n, lim.MaxUnits)
		ok = false
	}
	return ok
}

// checkDepth says what is wrong with a clean absolute path deeper than the
// cap, or "".
func (p *parser) checkDepth(path string) string {
	if d := strings.Count(path, "/"); d > p.size.limits.MaxPathDepth {
		return fmt.Sprintf("path has %d elements, over the cap of %d (--max-path-depth)", d, p.size.limits.MaxPathDepth)
	}
	return ""
}

// countInline charges the config's inline contents (unit contents, drop-ins
// and SSH keys) to the budget before the files are decoded. The raw
// object bounds them, so they only matter with small caps; a unit over
// what is left is refused, naming it.
func (p *parser) countInline(c types.Config) {
	for i, u := range c.Systemd.Units {
		field := fmt.Sprintf("spec.config.systemd.units[%d]", i)
		if u.Contents != nil && !p.charge(field+".contents", int64(len(*u.Contents))) {
			return
		}
		for j, d := range u.Dropins {
			if d.Contents != nil && !p.charge(fmt.Sprintf("%s.dropins[%d].contents", field, j), int64(len(*d.Contents))) {
				return
			}
		}
	}
	for i, u := range c.Passwd.Users {
		var n int64
		for _, k := range u.SSHAuthorizedKeys {
			n += int64(len(k)) + 1 // one line each
		}
		if !p.charge(fmt.Sprintf("spec.config.passwd.users[%d].sshAuthorizedKeys", i), n) {
			return
		}
	}
}

// charge adds n inline bytes to the budget, or refuses the field when they
// do not fit.
func (p *parser) charge(field string, n int64) bool {
	if n > p.size.left() {
		p.add(field, "%s", p.totalMsg())
		return false
	}
	p.size.used += n
	return true
}

func (p *parser) totalMsg() string {
	return fmt.Sprintf("the config's decoded files, unit contents and SSH keys exceed the config size cap of %s (--max-config-size)",
		sizeString(p.size.limits.MaxConfigSize))
}

// sizeString renders a byte count the way the flags take it.
func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
