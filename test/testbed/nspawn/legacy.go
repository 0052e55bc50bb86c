package nspawn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// legacyCgroups are a node's own cgroups in the host's cgroup v1 controller
// hierarchies (Options.LegacyCgroups): one folder per hierarchy, below the
// test process's own cgroup there, which the guest, in a cgroup namespace,
// sees as its root. A kubelet and runc in the guest then create their
// cgroups there, apart from every other node's.
//
// Why: on a hybrid host (v1 controllers, a v2 hierarchy with none) a guest
// on the v2 hierarchy has no memory or cpu controller, which runc needs to
// set a container's resources; the controllers are only on v1.
type legacyCgroups struct {
	dirs []string // the node's folder in each v1 hierarchy
}

// newLegacyCgroups creates the node's cgroup in every v1 controller
// hierarchy the test process is in, except name=systemd, which nspawn
// manages itself.
func newLegacyCgroups(name, suffix string) (*legacyCgroups, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading the test process's cgroups: %w", err)
	}
	lc := &legacyCgroups{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(self)), "\n") {
		// "4:memory:/a/b"; v2 is "0::/…".
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] == "" || strings.HasPrefix(parts[1], "name=") {
			continue
		}
		mount := filepath.Join("/sys/fs/cgroup", parts[1])
		if !exists(filepath.Join(mount, "cgroup.procs")) {
			return nil, errors.Join(fmt.Errorf("creating cgroups: no mount of v1 hierarchy %s at %s", parts[1], mount), lc.remove())
		}
		base := filepath.Join(mount, parts[2])
		dir := filepath.Join(base, cgroupParent, name+"-"+suffix)
		if err := mkdirCgroup(base, dir, parts[1] == "cpuset"); err != nil {
			return nil, errors.Join(err, lc.remove())
		}
		lc.dirs = append(lc.dirs, dir)
	}
	if len(lc.dirs) == 0 {
		return nil, errors.New("creating cgroups: the host has no cgroup v1 controller hierarchy")
	}
	return lc, nil
}

// mkdirCgroup creates dir and its missing parents below base, which
// exists. A new v1 cpuset cgroup has no CPUs and no memory nodes, and takes
// no process until it has: each one on the way gets its parent's, even one
// that exists already (another node may have just created it).
func mkdirCgroup(base, dir string, cpuset bool) error {
	if dir == base {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := mkdirCgroup(base, parent, cpuset); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating cgroup %s: %w", dir, err)
	}
	if !cpuset {
		return nil
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		have, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return fmt.Errorf("reading %s of cgroup %s: %w", f, dir, err)
		}
		if len(strings.TrimSpace(string(have))) > 0 {
			continue
		}
		v, err := os.ReadFile(filepath.Join(parent, f))
		if err != nil {
			return fmt.Errorf("reading %s of cgroup %s: %w", f, parent, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), v, 0); err != nil {
			return fmt.Errorf("setting %s of cgroup %s: %w", f, dir, err)
		}
	}
	return nil
}

// procsFiles are the cgroup.procs files a process writes its PID to, to
// join the node's v1 cgroups.
func (lc *legacyCgroups) procsFiles() []string {
	files := make([]string, len(lc.dirs))
	for i, d := range lc.dirs {
		files[i] = filepath.Join(d, "cgroup.procs")
	}
	return files
}

// remove deletes the node's v1 cgroups and what the guest made in them,
// deepest first. Their processes must have exited.
func (lc *legacyCgroups) remove() error { return removeCgroupTrees(lc.dirs) }

// joinScript is a shell script that writes its own PID to each of its
// arguments up to "--" and then executes the rest: nspawn started through
// it is in the node's v1 cgroups from its first instruction (v1 has no
// CLONE_INTO_CGROUP).
const joinScript = `for f; do shift; [ "$f" = -- ] && break; echo $$ > "$f" || exit 1; done; exec "$@"`
