package testbed

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Cgroup is a memory cgroup of its own for one node's daemon, as the
// kubelet gives each container one: what it is charged with is what the
// kubelet and `kubectl top` report for the container (Memory).
type Cgroup struct {
	// Dir is the cgroup's folder in the cgroup file system.
	Dir string
	v1  bool
}

// NewCgroup creates the memory cgroup name for a daemon. When the memory
// controller is on cgroup v1 (a hybrid host) it is a child of the test
// process's own memory cgroup (v1 lets a cgroup hold both processes and
// children). On cgroup v2, where a cgroup with processes cannot give its
// children controllers, it goes beside the nodes' cgroups, under the root's
// nodeconfd-testbed (package nspawn), with the memory controller enabled
// on the way down (untested here: this bed's host is hybrid).
func NewCgroup(name string) (*Cgroup, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading the test process's cgroup: %w", err)
	}
	c := &Cgroup{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(self)), "\n") {
		// 4:memory:/a/b on v1
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && strings.Contains(","+parts[1]+",", ",memory,") {
			c.Dir, c.v1 = filepath.Join("/sys/fs/cgroup/memory", parts[2], name), true
		}
	}
	if !c.v1 {
		parent := "/sys/fs/cgroup/nodeconfd-testbed"
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, fmt.Errorf("creating cgroup %s: %w", parent, err)
		}
		// Errors show as the missing memory files below.
		_ = os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+memory"), 0)
		_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory"), 0)
		c.Dir = filepath.Join(parent, name)
	}
	if err := os.Mkdir(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating cgroup %s: %w", c.Dir, err)
	}
	if _, err := c.Memory(); err != nil {
		_ = c.Remove()
		return nil, fmt.Errorf("cgroup %s has no memory accounting: %w", c.Dir, err)
	}
	return c, nil
}

// Remove removes the cgroup; the processes in it must have exited. Pages
// still charged to it go to its parent.
func (c *Cgroup) Remove() error {
	if err := unix.Rmdir(c.Dir); err != nil {
		return fmt.Errorf("removing cgroup %s: %w", c.Dir, err)
	}
	return nil
}

// CgroupMemory is what a memory cgroup is charged with, in bytes, under
// cgroup v2's names (v1's in parentheses).
type CgroupMemory struct {
	// Current is memory.current (memory.usage_in_bytes): everything
	// charged, anonymous, page cache and kernel memory.
	Current uint64
	// Anon is anon (total_rss): heap, stacks, the Go runtime's own.
	Anon uint64
	// File is file (total_cache): the page cache charged to the cgroup,
	// mapped or not.
	File uint64
	// FileMapped is file_mapped (total_mapped_file): the part of File
	// some process of the cgroup maps, such as its executable's pages.
	FileMapped uint64
	// ActiveFile and InactiveFile are File on the kernel's active and
	// inactive LRU lists (active_file, inactive_file).
	ActiveFile, InactiveFile uint64
	// RefaultFile is the page cache read back in soon after it was
	// reclaimed (workingset_refault_file, in pages times the page size): the
	// kernel puts such pages straight on the active list.
	RefaultFile uint64
}

// WorkingSet is what cAdvisor reports as container_memory_working_set_bytes
// and so what the kubelet's eviction and `kubectl top` see: Current less
// InactiveFile. It counts the anonymous memory, the kernel memory and the
// page cache on the active list, mapped executable pages included; it
// leaves out the inactive page cache, which the kernel reclaims first
// when memory runs short.
func (m CgroupMemory) WorkingSet() uint64 {
	if m.InactiveFile > m.Current {
		return 0
	}
	return m.Current - m.InactiveFile
}

// Memory reads what the cgroup is charged with now.
func (c *Cgroup) Memory() (CgroupMemory, error) {
	currentFile, prefix := "memory.current", ""
	names := map[string]string{"anon": "anon", "file": "file", "file_mapped": "file_mapped",
		"active_file": "active_file", "inactive_file": "inactive_file"}
	if c.v1 {
		currentFile, prefix = "memory.usage_in_bytes", "total_"
		names = map[string]string{"anon": "rss", "file": "cache", "file_mapped": "mapped_file",
			"active_file": "active_file", "inactive_file": "inactive_file"}
	}
	var m CgroupMemory
	cur, err := os.ReadFile(filepath.Join(c.Dir, currentFile))
	if err != nil {
		return m, fmt.Errorf("reading the cgroup's memory: %w", err)
	}
	if m.Current, err = strconv.ParseUint(strings.TrimSpace(string(cur)), 10, 64); err != nil {
		return m, fmt.Errorf("parsing %s of cgroup %s: %w", currentFile, c.Dir, err)
	}
	stat, err := os.ReadFile(filepath.Join(c.Dir, "memory.stat"))
	if err != nil {
		return m, fmt.Errorf("reading the cgroup's memory: %w", err)
	}
	values := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			values[k], _ = strconv.ParseUint(v, 10, 64)
		}
	}
	for field, dst := range map[string]*uint64{"anon": &m.Anon, "file": &m.File, "file_mapped": &m.FileMapped,
		"active_file": &m.ActiveFile, "inactive_file": &m.InactiveFile} {
		v, ok := values[prefix+names[field]]
		if !ok {
			return m, fmt.Errorf("no %s in memory.stat of cgroup %s", prefix+names[field], c.Dir)
		}
		*dst = v
	}
	m.RefaultFile = values[prefix+"workingset_refault_file"] * uint64(os.Getpagesize())
	return m, nil
}

// containerBinary copies the daemon binary to dst and drops the copy's
// pages from the page cache, as a container starts from a binary of its
// own image: the pages the daemon then touches are charged to its
// cgroup, not to the test process that wrote them.
func containerBinary(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copying the daemon binary: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("copying the daemon binary: %w", err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copying the daemon binary to %s: %w", dst, err)
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("copying the daemon binary to %s: %w", dst, err)
	}
	// Clean (synced) pages nobody maps are dropped.
	if err := unix.Fadvise(int(out.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("dropping %s from the page cache: %w", dst, err)
	}
	return out.Close()
}

// daemonCommand is the daemon's command: with a cgroup, through a shell
// that moves itself into the cgroup and then becomes the daemon, so that
// everything the daemon touches from its first instruction is charged
// there (moving a running process would leave what it used before behind).
func (n *Node) daemonCommand() *exec.Cmd {
	if n.cgroup == nil {
		return exec.Command(n.bed.Daemon, n.args...)
	}
	script := `echo $$ > "$1" && shift && exec "$@"`
	args := append([]string{"-c", script, "sh", filepath.Join(n.cgroup.Dir, "cgroup.procs"), n.bin}, n.args...)
	return exec.Command("/bin/sh", args...)
}

// Squeeze sets the cgroup's memory limit to limit bytes (v2: memory.high),
// as memory pressure would, so that the kernel reclaims down to it, the
// inactive page cache first; Unsqueeze lifts it. On v1 a limit it cannot
// reclaim down to is refused (EBUSY): the kernel went as far as it could.
func (c *Cgroup) Squeeze(limit uint64) error {
	return c.setLimit(strconv.FormatUint(limit, 10))
}

// Unsqueeze lifts the limit Squeeze set.
func (c *Cgroup) Unsqueeze() error {
	if c.v1 {
		return c.setLimit("-1")
	}
	return c.setLimit("max")
}

func (c *Cgroup) setLimit(v string) error {
	file := "memory.high"
	if c.v1 {
		file = "memory.limit_in_bytes"
	}
	err := os.WriteFile(filepath.Join(c.Dir, file), []byte(v), 0)
	if err != nil && !errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("setting %s of cgroup %s to %s: %w", file, c.Dir, v, err)
	}
	return nil
}
