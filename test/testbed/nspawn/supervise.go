package nspawn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// exitReboot is systemd-nspawn's exit code when the guest rebooted.
const exitReboot = 133

// spawn starts one systemd-nspawn for the node, cloned straight into the
// node's cgroup. It refuses once Stop has begun.
func (n *Node) spawn() (*exec.Cmd, error) {
	console := "passive"
	if n.opts.Log != nil {
		console = "read-only" // the guest's console goes to Log
	}
	cmd := n.command(console)
	cmd.Stdout = n.opts.Log
	cmd.Stderr = n.opts.Log

	cgFD, err := os.Open(n.cg.dir())
	if err != nil {
		return nil, fmt.Errorf("opening cgroup %s: %w", n.cg.dir(), err)
	}
	defer cgFD.Close()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		UseCgroupFD: true,
		CgroupFD:    int(cgFD.Fd()),
		Setpgid:     true, // a ^C in the terminal is for the tests, not the guest
		// If the test binary dies, the guest halts rather than lingers.
		Pdeathsig: syscall.SIGTERM,
	}

	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopping {
		return nil, errors.New("node is stopping")
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("running systemd-nspawn: %w", err)
	}
	n.proc = cmd.Process
	n.boots++
	n.notifyLocked()
	return cmd, nil
}

// command is the systemd-nspawn command of one boot.
func (n *Node) command(console string) *exec.Cmd {
	args := []string{
		"--boot",
		"--register=no", // no machined on the host
		"--keep-unit",   // no systemd on the host to make a scope
		"--console=" + console,
		"--setenv=SYSTEMD_COLORS=0",
		"-D", n.Root,
		"--machine=" + n.machine,
		"--hostname=" + n.Name,
		"--bind=" + n.busDir + ":/run/dbus",
	}
	if n.opts.Bridge != "" {
		args = append(args, "--network-bridge="+n.opts.Bridge)
	} else {
		args = append(args, "--private-network")
	}
	hosts := make([]string, 0, len(n.opts.BindRO))
	for h := range n.opts.BindRO {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		args = append(args, "--bind-ro="+h+":"+n.opts.BindRO[h])
	}
	env := append(os.Environ(), "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1")
	if n.legacy == nil {
		cmd := exec.Command("systemd-nspawn", args...)
		cmd.Env = env
		return cmd
	}
	// runc gives each container a session keyring, which nspawn's
	// system call filter refuses by default.
	args = append(args, "--capability=all", "--system-call-filter=@keyring", "--bind-ro=/dev/kmsg")
	env = append(os.Environ(), "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0", "SYSTEMD_NSPAWN_USE_CGNS=1")
	// Through joinScript, which joins the v1 cgroups and then becomes nspawn.
	script := append([]string{"-c", joinScript, "sh"}, n.legacy.procsFiles()...)
	script = append(append(script, "--", "systemd-nspawn"), args...)
	cmd := exec.Command("/bin/sh", script...)
	cmd.Env = env
	return cmd
}

// supervise waits for nspawn; when the guest rebooted, it starts nspawn
// again on the same root, until the guest powers off or Stop is called.
func (n *Node) supervise(cmd *exec.Cmd) {
	defer close(n.done)
	for {
		n.mu.Lock()
		boot := n.boots
		n.mu.Unlock()
		watchCtx, cancel := context.WithCancel(context.Background())
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			n.watchBoot(watchCtx, boot)
		}()

		err := cmd.Wait()
		cancel()
		<-watched

		n.mu.Lock()
		n.proc = nil
		stopping := n.stopping
		n.mu.Unlock()
		if n.opts.OnDown != nil {
			n.opts.OnDown()
		}
		code := cmd.ProcessState.ExitCode()
		if stopping || code != exitReboot {
			if !stopping {
				n.exitErr = fmt.Errorf("systemd-nspawn exited with code %d: %w", code, err)
			} else {
				n.exitErr = errors.New("node was stopped")
			}
			return
		}
		if cmd, err = n.spawn(); err != nil {
			n.exitErr = fmt.Errorf("restarting after a guest reboot: %w", err)
			return
		}
	}
}

// watchBoot polls the guest until this boot is running, then records it and
// calls OnRunning. It gives up when ctx ends, that is when nspawn exited.
func (n *Node) watchBoot(ctx context.Context, boot int) {
	if err := n.WaitRunning(ctx); err != nil {
		return
	}
	n.mu.Lock()
	n.running = boot
	n.notifyLocked()
	n.mu.Unlock()
	if n.opts.OnRunning != nil {
		n.opts.OnRunning()
	}
}

// notifyLocked wakes up WaitBoot callers. n.mu must be held.
func (n *Node) notifyLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// Stop powers the guest off (SIGTERM to nspawn, which halts the guest),
// kills whatever is left after a timeout or when ctx ends, then unmounts
// the root and removes the cgroup. It leaves no process, mount or cgroup.
// Later calls return the first call's result.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	n.mu.Lock()
	n.stopping = true
	proc := n.proc
	n.mu.Unlock()
	if proc != nil {
		_ = proc.Signal(syscall.SIGTERM)
	}

	graceCtx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	var errs []error
	select {
	case <-n.done:
	case <-graceCtx.Done():
		// The guest hangs: kill nspawn and the guest at once.
		if err := n.cg.kill(); err != nil {
			errs = append(errs, err)
		}
		select {
		case <-n.done:
		case <-time.After(10 * time.Second):
			errs = append(errs, errors.New("systemd-nspawn survived SIGKILL"))
		}
	}
	return errors.Join(append(errs, n.tearDown())...)
}

// tearDown kills leftovers, unmounts the root and removes the cgroup and
// the host's propagation folder of the machine. nspawn must have exited.
func (n *Node) tearDown() error {
	var errs []error
	if n.cg != nil {
		// Normally empty already; after a kill the guest's processes may
		// still be exiting.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if busy, _ := n.cg.populated(); busy {
			if err := n.cg.kill(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := n.cg.waitEmpty(ctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	if err := unmount(n.Root); err != nil {
		errs = append(errs, err)
	}
	if n.cg != nil {
		if err := n.cg.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if n.legacy != nil {
		if err := n.legacy.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	// nspawn leaves this behind when /run is not a tmpfs.
	_ = os.Remove(filepath.Join("/run/systemd/nspawn/propagate", n.machine))
	if n.busDir != "" && filepath.Dir(n.busDir) != n.opts.WorkDir {
		_ = os.RemoveAll(n.busDir)
	}
	return errors.Join(errs...)
}

// unmount unmounts dir if it is a mount point; a busy mount is detached.
func unmount(dir string) error {
	err := syscall.Unmount(dir, 0)
	if errors.Is(err, syscall.EBUSY) {
		err = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("unmounting %s: %w", dir, err)
	}
	return nil
}
