package osupdate

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A process group does not hold a process that calls setsid (or setpgid):
// it leaves the group, and a kill of the group misses it. A cgroup holds
// every descendant, whatever it does, and cgroup v2's cgroup.kill kills
// them all at once. A command with Chroot.Cgroup set is started right into
// a cgroup v2 of its own (clone3 CLONE_INTO_CGROUP, so not even its first
// instruction runs outside), made under the daemon's own cgroup; once the
// command ended or timed out, every process left in it is killed and the
// cgroup removed. The daemon's cgroup holds processes, so it has no
// controllers for its children (cgroup v2's rule), and the command's
// cgroup needs none: it only groups and kills.

// cmdCgroup is the cgroup v2 of one command.
type cmdCgroup struct {
	dir string
	fd  *os.File
}

// newCmdCgroup makes a cgroup for one command under the daemon's own
// cgroup v2 (from /proc/self/cgroup, in the cgroup2 mount of
// /proc/self/mountinfo).
func newCmdCgroup() (*cmdCgroup, error) {
	mnt, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var own string
	for line := range strings.SplitSeq(string(self), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	if own == "" {
		return nil, errors.New("the daemon is in no cgroup v2")
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	dir := filepath.Join(mnt, own, "nodeconfd-cmd-"+hex.EncodeToString(suffix))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = unix.Rmdir(dir)
		return nil, fmt.Errorf("opening cgroup %s: %w", dir, err)
	}
	return &cmdCgroup{dir: dir, fd: fd}, nil
}

// cgroup2Mount returns where the cgroup v2 hierarchy is mounted: at
// /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one.
func cgroup2Mount() (string, error) {
	fh, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if f, p := strings.Fields(pre), strings.Fields(post); ok && len(f) >= 5 && len(p) > 0 && p[0] == "cgroup2" {
			return f[4], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no cgroup v2 mount")
}

// start makes cmd start inside the cgroup.
func (c *cmdCgroup) start(cmd *exec.Cmd) {
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(c.fd.Fd())
}

// kill kills every process in the cgroup.
func (c *cmdCgroup) kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// remove kills what is left and removes the cgroup once the kernel has
// moved out its last process (which takes a moment after the kill).
func (c *cmdCgroup) remove() error {
	c.fd.Close()
	_ = c.kill() // a failure shows as the cgroup staying busy
	var err error
	for wait := time.Millisecond; ; wait *= 2 {
		if err = unix.Rmdir(c.dir); !errors.Is(err, unix.EBUSY) || wait > 2*time.Second {
			break
		}
		time.Sleep(wait)
	}
	if err != nil {
		return fmt.Errorf("removing cgroup %s: %w", c.dir, err)
	}
	return nil
}
