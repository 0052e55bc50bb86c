package plan

import (
	"fmt"
	"path"
	"strings"
)

// unitDir is where the daemon writes unit files, their drop-in folders and
// systemd its mask and enablement links (see daemon/hostfs/units.go).
const unitDir = "/etc/systemd/system"

// coreHomes are the homes user core has on the systems the daemon runs on
// (/var/home/core on ostree systems, where /home links to /var/home). The
// daemon writes core's SSH keys to <home>/.ssh/authorized_keys. Other
// users' homes are known only on the node: Host.Preflight refuses a file of
// the config at their key files.
func coreHomes() []string { return []string{"/home/core", "/var/home/core"} }

// claim is a path the daemon writes for something other than a storage file.
type claim struct {
	path string
	// tree: everything under path is the claim's too.
	tree bool
	// what says who writes it, for messages.
	what string
}

// claims lists the paths the config's units and core's SSH keys write, remove or
// link. A unit's file is claimed whatever the unit sets: the daemon writes
// it (contents), systemd links it to /dev/null (mask), or the daemon
// removes its own earlier copy (neither). The unit's drop-in folder is
// claimed whole: the daemon removes the files it wrote there that the unit
// no longer has.
func claims(cfg *Config) []claim {
	var cs []claim
	for _, name := range SortedKeys(cfg.Units) {
		u := cfg.Units[name]
		cs = append(cs,
			claim{path: unitDir + "/" + name, what: fmt.Sprintf("the unit file of %s (%s)", name, u.Field)},
			claim{path: unitDir + "/" + name + ".d", tree: true, what: fmt.Sprintf("the drop-in folder of %s (%s)", name, u.Field)})
	}
	keys := "core's SSH keys"
	if f := cfg.SSHKeys[coreUser].Field; f != "" {
		keys += " (" + f + ")"
	}
	for _, home := range coreHomes() {
		cs = append(cs, claim{path: home + "/.ssh/authorized_keys", what: keys + ", which the daemon writes from passwd.users[core].sshAuthorizedKeys"})
	}
	return cs
}

// conflicts refuses storage files that collide with another file of the
// config (a file where a folder of another one goes) or with what the
// daemon writes itself for units and SSH keys: the write step would fail,
// or the two would overwrite each other at every update.
func (p *parser) conflicts(cfg *Config) {
	cs := claims(cfg)
	for _, fp := range SortedKeys(cfg.Files) {
		f := cfg.Files[fp]
		if msg := fileConflict(cfg, cs, fp); msg != "" {
			p.add(f.Field+".path", "%s", msg)
		}
	}
}

// fileConflict says how the file at fp collides, if it does.
func fileConflict(cfg *Config, cs []claim, fp string) string {
	for dir := path.Dir(fp); dir != "/"; dir = path.Dir(dir) {
		if g, ok := cfg.Files[dir]; ok {
			return fmt.Sprintf("path %q is inside %s, which %s writes as a file", fp, dir, g.Field)
		}
	}
	for _, c := range cs {
		switch {
		case fp == c.path:
			return fmt.Sprintf("path %q is %s", fp, c.what)
		case c.tree && within(fp, c.path):
			return fmt.Sprintf("path %q is inside %s", fp, c.what)
		case within(c.path, fp):
			return fmt.Sprintf("path %q would be a file where the folder of %s must be (%s)", fp, c.what, c.path)
		}
	}
	dir, base := path.Split(fp)
	if u, ok := cfg.Units[base]; ok && u.Enabled != nil && path.Dir(path.Clean(dir)) == unitDir && isDependencyDir(path.Base(dir)) {
		return fmt.Sprintf("path %q is where systemd links %s when enabling or disabling it (%s.enabled)", fp, base, u.Field)
	}
	return ""
}

// isDependencyDir reports whether dir (a name in /etc/systemd/system) holds
// the links that enabling a unit makes.
func isDependencyDir(dir string) bool {
	for _, s := range []string{".wants", ".requires", ".upholds"} {
		if strings.HasSuffix(dir, s) && len(dir) > len(s) {
			return true
		}
	}
	return false
}
