package plan

import (
	"fmt"

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

// Limits caps the decoded size of a config's contents. Decoding is streamed
// and stops one byte past a cap, so a config over a cap costs no more than
// the cap to refuse. The zero value means the defaults.
type Limits struct {
	// MaxFileSize caps one file's decoded contents, appends included; 0
	// means DefaultMaxFileSize.
	MaxFileSize int64
	// MaxConfigSize caps the decoded total of the files, unit contents,
	// drop-ins and SSH keys of one config; 0 means DefaultMaxConfigSize.
	MaxConfigSize int64
}

// withDefaults fills the zero caps.
func (l Limits) withDefaults() Limits {
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxConfigSize <= 0 {
		l.MaxConfigSize = DefaultMaxConfigSize
	}
	return l
}

// Check reports caps that make no sense: negative, or a file cap above the
// config cap.
func (l Limits) Check() error {
	if l.MaxFileSize < 0 || l.MaxConfigSize < 0 {
		return fmt.Errorf("size caps must not be negative (file %d, config %d)", l.MaxFileSize, l.MaxConfigSize)
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

// countInline charges the config's inline contents (unit contents, drop-ins
// and core's SSH keys) to the budget before the files are decoded. The raw
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
		if u.Name != coreUser {
			continue
		}
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
