package plan

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_5/types"
)

// passwd takes the SSH keys of every user and core's password hash. Upstream's
// machine-config-daemon takes core's alone; Ignition writes any user's keys
// to its home, creating the user when missing. nodeconfd writes the keys of
// users the node already has (Host.Preflight refuses the others: it never
// creates a user) and leaves every other passwd setting to a reprovision:
// a change of it cannot be applied in place (docs/parity.md).
func (p *parser) passwd(cfg *Config, pw types.Passwd) {
	for i, u := range pw.Users {
		if msg := checkText("user name", u.Name); msg != "" {
			p.add(fmt.Sprintf("spec.config.passwd.users[%d].name", i), "%s", msg)
			continue
		}
		if len(u.SSHAuthorizedKeys) > 0 {
			uk := UserKeys{User: u.Name, Field: fmt.Sprintf("spec.config.passwd.users[%d].sshAuthorizedKeys", i)}
			for _, k := range u.SSHAuthorizedKeys {
				uk.Keys = append(uk.Keys, string(k))
			}
			if cfg.SSHKeys == nil {
				cfg.SSHKeys = map[string]UserKeys{}
			}
			cfg.SSHKeys[u.Name] = uk
		}
		rest := u
		rest.SSHAuthorizedKeys = nil
		if u.Name == coreUser {
			if h := deref(u.PasswordHash); h != "" {
				if msg := CheckPasswordHash(h); msg != "" {
					p.add(fmt.Sprintf("spec.config.passwd.users[%d].passwordHash", i), "%s", msg)
				}
				cfg.PasswordHash = h
			}
			rest.PasswordHash = nil
		}
		if !reflect.DeepEqual(rest, types.PasswdUser{Name: u.Name}) {
			cfg.Unreconcilable[fmt.Sprintf("spec.config.passwd.users[name=%s]", u.Name)] = canonical(rest)
		}
	}
	if len(pw.Groups) > 0 {
		cfg.Unreconcilable["spec.config.passwd.groups"] = canonical(pw.Groups)
	}
}

// unreconcilableSections records the Ignition sections only a reprovision
// applies. machine-config-daemon refuses a change of disks, RAID,
// filesystems (unless the cluster's MachineConfiguration overrides it),
// directories and Ignition's own kernel arguments, and links added or
// changed, but lets a config drop its links (see removableSections). It
// ignores LUKS; a change there is refused here, so that an encryption
// change is never reported done without being made (docs/parity.md).
func (p *parser) unreconcilableSections(cfg *Config, c types.Config) {
	sections := []struct {
		field string
		n     int
		value any
	}{
		{"spec.config.storage.disks", len(c.Storage.Disks), c.Storage.Disks},
		{"spec.config.storage.raid", len(c.Storage.Raid), c.Storage.Raid},
		{"spec.config.storage.filesystems", len(c.Storage.Filesystems), c.Storage.Filesystems},
		{"spec.config.storage.luks", len(c.Storage.Luks), c.Storage.Luks},
		{"spec.config.storage.directories", len(c.Storage.Directories), c.Storage.Directories},
		{"spec.config.storage.links", len(c.Storage.Links), c.Storage.Links},
		{"spec.config.kernelArguments", len(c.KernelArguments.ShouldExist) + len(c.KernelArguments.ShouldNotExist), c.KernelArguments},
	}
	for _, s := range sections {
		if s.n > 0 {
			cfg.Unreconcilable[s.field] = canonical(s.value)
		}
	}
}

// kernelArguments splits each entry of spec.kernelArguments into single
// arguments: an entry may hold several, separated by spaces outside quotes.
func (p *parser) kernelArguments(entries []string) []string {
	var args []string
	for i, e := range entries {
		split, ok := SplitKernelArgs(e)
		if !ok {
			p.add(fmt.Sprintf("spec.kernelArguments[%d]", i), "unbalanced double quote in %q", e)
			continue
		}
		for _, a := range split {
			if msg := checkKernelArg(a); msg != "" {
				p.add(fmt.Sprintf("spec.kernelArguments[%d]", i), "%s", msg)
				break
			}
		}
		args = append(args, split...)
	}
	if msg := checkCmdline(args); msg != "" {
		p.add("spec.kernelArguments", "%s", msg)
	}
	return args
}

// SplitKernelArgs splits s at whitespace outside double quotes; ok is false
// when a quote is left open.
func SplitKernelArgs(s string) (args []string, ok bool) {
	var cur strings.Builder
	quoted, started := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			started = true
			cur.WriteRune(r)
		case !quoted && (r == ' ' || r == '\t' || r == '\n'):
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args, !quoted
}

// maxPasswordHash bounds a password hash; crypt(3)'s longest (SHA-512
// with rounds=) is about 120 characters.
const maxPasswordHash = 512

// CheckPasswordHash says what is wrong with a password hash for
// /etc/shadow, or "". Only crypt(3)'s alphabet is taken ([./0-9A-Za-z],
// "$" between the parts, "=" and "," in parameters, a leading "!" or "*"
// for a locked account): no ":" or newline can reach the file, no shell
// character a command line, and no hash that is not one passes for one.
func CheckPasswordHash(h string) string {
	if len(h) > maxPasswordHash {
		return fmt.Sprintf("password hash of %d bytes: at most %d", len(h), maxPasswordHash)
	}
	body := strings.TrimLeft(h, "!*")
	for i, r := range body {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("./$=,", r)
		if !ok {
			return fmt.Sprintf("password hash has %q at byte %d: only crypt(3) hashes ([./0-9A-Za-z$=,], a leading ! or *) are taken", r, len(h)-len(body)+i)
		}
	}
	return ""
}

// canonical encodes v as JSON; Ignition's types always encode.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unencodable: %v", err)
	}
	return string(b)
}

func copyInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
