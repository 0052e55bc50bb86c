package nspawn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Leader returns the host PID of the guest's PID 1 (its systemd).
func (n *Node) Leader() (int, error) {
	pids, err := n.cg.pids()
	if err != nil {
		return 0, err
	}
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue // exited meanwhile
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			// "NSpid:	4242	1": PID 1 in a PID namespace below ours.
			if f := strings.Fields(line); len(f) == 3 && f[0] == "NSpid:" && f[2] == "1" {
				return strconv.Atoi(f[1])
			}
		}
	}
	return 0, fmt.Errorf("finding the PID 1 of node %s: no guest process", n.Name)
}

// Exec runs a command inside the guest (nsenter into its PID 1's
// namespaces) and returns its standard output. Errors carry its stderr.
func (n *Node) Exec(ctx context.Context, args ...string) ([]byte, error) {
	if len(args) == 0 {
		return nil, errors.New("exec: no command")
	}
	leader, err := n.Leader()
	if err != nil {
		return nil, err
	}
	nsenter := append([]string{"--target", strconv.Itoa(leader),
		"--mount", "--uts", "--ipc", "--net", "--pid", "--root", "--wd", "--"}, args...)
	cmd := exec.CommandContext(ctx, "nsenter", nsenter...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("running %q in node %s: %w: %s", args, n.Name, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// BootID reads the guest's /proc/sys/kernel/random/boot_id. nspawn mounts
// a fresh random one over it at every start, so it changes on every guest
// reboot (it is not the host's).
func (n *Node) BootID(ctx context.Context) (string, error) {
	out, err := n.Exec(ctx, "cat", "/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(out)), err
}
