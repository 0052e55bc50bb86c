package nspawn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupParent is the folder, under each cgroup hierarchy root, that holds
// one cgroup per node.
const cgroupParent = "nodeconfd-testbed"

// A cgroup is the node's own cgroup, which systemd-nspawn is started in.
//
// Why: the host's PID 1 is not systemd, so there is nobody to create a scope
// per container; nspawn (--keep-unit --register=no) splits the cgroup it is
// started in into "supervisor" and "payload" and hands "payload" to the
// guest's systemd. Started in the caller's cgroup (often the root), two nodes
// would share one payload. So each nspawn is cloned straight into a fresh
// cgroup v2 folder (CLONE_INTO_CGROUP, exec.Cmd's SysProcAttr.CgroupFD). On a
// hybrid host (v1 controllers, v2 at /sys/fs/cgroup/unified) nspawn takes its
// path from the v2 hierarchy and mirrors it in the v1 name=systemd one,
// which is why remove cleans both.
type cgroup struct {
	rel   string   // path below each hierarchy root
	v2    string   // cgroup v2 hierarchy root
	other []string // further hierarchy roots nspawn may mirror rel into
}

func newCgroup(name string) (*cgroup, error) {
	cg := &cgroup{}
	switch {
	case exists("/sys/fs/cgroup/cgroup.controllers"):
		cg.v2 = "/sys/fs/cgroup"
	case exists("/sys/fs/cgroup/unified/cgroup.controllers"):
		cg.v2 = "/sys/fs/cgroup/unified"
		cg.other = []string{"/sys/fs/cgroup/systemd"}
	default:
		return nil, errors.New("creating a cgroup: no cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified")
	}
	parent := filepath.Join(cg.v2, cgroupParent)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("creating cgroup %s: %w", parent, err)
	}
	dir, err := os.MkdirTemp(parent, name+"-")
	if err != nil {
		return nil, fmt.Errorf("creating a cgroup under %s: %w", parent, err)
	}
	cg.rel, _ = filepath.Rel(cg.v2, dir)
	return cg, nil
}

// dir is the node's cgroup folder in the v2 hierarchy.
func (cg *cgroup) dir() string { return filepath.Join(cg.v2, cg.rel) }

// kill kills every process in the cgroup and its children.
func (cg *cgroup) kill() error {
	if err := os.WriteFile(filepath.Join(cg.dir(), "cgroup.kill"), []byte("1"), 0); err != nil {
		return fmt.Errorf("killing cgroup %s: %w", cg.dir(), err)
	}
	return nil
}

// populated tells whether any live process is left in the cgroup tree.
func (cg *cgroup) populated() (bool, error) {
	b, err := os.ReadFile(filepath.Join(cg.dir(), "cgroup.events"))
	if err != nil {
		return false, fmt.Errorf("reading events of cgroup %s: %w", cg.dir(), err)
	}
	return strings.Contains(string(b), "populated 1"), nil
}

// waitEmpty waits until no process is left in the cgroup tree.
func (cg *cgroup) waitEmpty(ctx context.Context) error {
	for {
		busy, err := cg.populated()
		if err != nil || !busy {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for cgroup %s to empty: %w", cg.dir(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pids lists the processes of the cgroup tree.
func (cg *cgroup) pids() ([]int, error) {
	var pids []int
	err := filepath.WalkDir(cg.dir(), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if pid, err := strconv.Atoi(sc.Text()); err == nil {
				pids = append(pids, pid)
			}
		}
		return sc.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("listing processes of cgroup %s: %w", cg.dir(), err)
	}
	return pids, nil
}

// remove deletes the cgroup folders, deepest first, in every hierarchy. The
// cgroup must be empty.
func (cg *cgroup) remove() error {
	var tops []string
	for _, root := range append([]string{cg.v2}, cg.other...) {
		tops = append(tops, filepath.Join(root, cg.rel))
	}
	return removeCgroupTrees(tops)
}

// removeCgroupTrees deletes each cgroup folder of tops and the folders below
// it, deepest first (their processes must have exited), then its parent,
// shared by all nodes, when it was the last one there.
func removeCgroupTrees(tops []string) error {
	var errs []error
	for _, top := range tops {
		var dirs []string
		err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return err
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("listing cgroup %s: %w", top, err))
			continue
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
			}
		}
		_ = os.Remove(filepath.Dir(top))
	}
	return errors.Join(errs...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
