package hostfs

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// unitSearchDirs are the folders systemd's system manager loads unit files
// from that `systemctl enable` accepts (it refuses generated and transient
// units), relative to the root, in its order (systemd.unit(5)). /lib is
// /usr/lib on merged-/usr systems and its own folder on older ones.
func unitSearchDirs() []string {
	return []string{
		"etc/systemd/system.control", "run/systemd/system.control",
		"etc/systemd/system", "etc/systemd/system.attached",
		"run/systemd/system", "run/systemd/system.attached",
		"usr/local/lib/systemd/system", "usr/lib/systemd/system", "lib/systemd/system",
	}
}

// checkEnable refuses to enable a unit systemd has no unit file for: the
// config gives it no contents (nor its template's), and no search folder
// of the node holds it (a link to /dev/null is a mask, which the write
// lifts before enabling, not a unit file). systemd would refuse the enable
// after the drain, with the files already written.
func (b *batch) checkEnable(u plan.Unit, desired plan.Config) error {
	names := []string{u.Name}
	if tmpl, ok := templateOf(u.Name); ok {
		names = append(names, tmpl)
	}
	for _, name := range names {
		if d, ok := desired.Units[name]; ok && d.Contents != nil {
			return nil
		}
		for _, dir := range unitSearchDirs() {
			found, err := b.unitFileAt(dir + "/" + name)
			if err != nil {
				return fmt.Errorf("unit %s: looking for its unit file: %w", u.Name, err)
			}
			if found {
				return nil
			}
		}
	}
	return fmt.Errorf("unit %s has no unit file: the config gives it no contents and the node has none in /%s: systemd cannot enable it",
		u.Name, strings.Join(unitSearchDirs(), ", /"))
}

// unitFileAt reports whether rel holds a unit file (or a link to one).
func (b *batch) unitFileAt(rel string) (bool, error) {
	fi, err := b.lstat(rel)
	switch {
	case isNotExist(err):
		return false, nil
	case err != nil:
		return false, err
	case fi.Mode().Type() != fs.ModeSymlink:
		return true, nil
	}
	d, err := b.dir(path.Dir(rel), false)
	if err != nil || d == nil {
		return false, err
	}
	target, err := d.Readlink(path.Base(rel))
	if err != nil {
		return false, err
	}
	return target != "/dev/null", nil
}

// templateOf returns the template of an instance name (a@b.service:
// a@.service).
func templateOf(name string) (string, bool) {
	at := strings.IndexByte(name, '@')
	dot := strings.LastIndexByte(name, '.')
	if at < 0 || dot < at+2 {
		return "", false
	}
	return name[:at+1] + name[dot:], true
}
