package osupdate

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// DefaultWaitDelay bounds how long a command's output is read after the
// command exited or was killed: a process it started that still holds its
// standard output or error (a hung grandchild) cannot block the daemon.
const DefaultWaitDelay = 10 * time.Second

// cancelTimeout bounds `rpm-ostree cancel` after a command timed out.
const cancelTimeout = time.Minute

// inGroup makes cmd the leader of a process group of its own, killed as a
// whole (SIGKILL) when the command's context ends, and bounds the wait for
// its output once it exited or was killed.
func inGroup(cmd *exec.Cmd, waitDelay time.Duration) {
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return killGroup(cmd) }
	if waitDelay <= 0 {
		waitDelay = DefaultWaitDelay
	}
	cmd.WaitDelay = waitDelay
}

// killGroup kills every process of cmd's group. The group outlives its
// leader while any member is alive, so the group ID cannot be reused
// while there is anything to kill.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// transaction reports whether an rpm-ostree command starts a transaction
// in rpm-ostreed (which goes on when the client is killed). Reading
// commands do not, nor does cancel; and a read that timed out while
// another client's transaction ran must not cancel that one.
func transaction(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "status", "cancel", "--version", "--help", "-h":
		return false
	case "kargs":
		for _, a := range args[1:] {
			for _, edit := range []string{"--append", "--delete", "--replace", "--editor"} {
				if strings.HasPrefix(a, edit) {
					return true
				}
			}
		}
		return false
	}
	return true
}

// cancelTransaction runs `rpm-ostree cancel` after an rpm-ostree command
// that starts a transaction was killed (timed out, or its caller gave up),
// so that the transaction does not go on, and block the next one, out of
// the daemon's sight. It returns what cancel said, for the error.
func (c Chroot) cancelTransaction(ctx context.Context) string {
	cc := c
	cc.Timeout = cancelTimeout
	out, err := cc.Run(context.WithoutCancel(ctx), NameRpmOstree, "cancel")
	if err != nil {
		return "rpm-ostree cancel failed: " + err.Error()
	}
	return "rpm-ostree cancel: " + cut(strings.Join(strings.Fields(string(out)), " "), stderrMax)
}
