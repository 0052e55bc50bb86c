package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/nodeconfd/nodeconfd/daemon/faultpoint"
)

// crashState is a node's armed fault point (package daemon/faultpoint).
type crashState struct {
	// point is passed as NODECONFD_TEST_KILL_AT to the daemons started
	// while it is set; "" when disarmed.
	point string
	// held keeps the daemon stopped after it killed itself (also when the
	// node boots) until ResumeDaemon.
	held    bool
	crashed chan struct{}
}

// env is the daemon's environment: the test bed's, plus the fault point.
func (c *crashState) env() []string {
	if c.point == "" {
		return nil // the test bed's own
	}
	return append(os.Environ(), faultpoint.EnvVar+"="+c.point)
}

// ArmKill makes the daemons started from now on kill themselves with
// SIGKILL at point (NODECONFD_TEST_KILL_AT, "<point>[:n]"); a daemon
// already running is not affected. The returned channel is closed once one
// did: the point is then disarmed, and the daemon stays stopped (also
// across a boot of the node) until ResumeDaemon.
func (n *Node) ArmKill(point string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.crash = crashState{point: point, crashed: make(chan struct{})}
	return n.crash.crashed
}

// ResumeDaemon disarms the fault point and starts the daemon again.
func (n *Node) ResumeDaemon() error {
	n.mu.Lock()
	n.crash = crashState{}
	n.mu.Unlock()
	return n.StartDaemon()
}

// WaitKilled waits until an armed daemon killed itself.
func (n *Node) WaitKilled(ctx context.Context, crashed <-chan struct{}) error {
	select {
	case <-crashed:
		return nil
	case <-ctx.Done():
		n.mu.Lock()
		point := n.crash.point
		n.mu.Unlock()
		return fmt.Errorf("the daemon of node %s never reached fault point %q: %w", n.Name, point, ctx.Err())
	}
}

// exitedAt notes the end of the daemon process cmd: one that an armed
// fault point killed (SIGKILL, not sent by the test bed, which forgets its
// daemon before it signals) holds the daemon stopped.
func (n *Node) exitedAt(cmd *exec.Cmd) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.daemon != cmd || n.crash.point == "" || n.crash.held {
		return
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return
	}
	n.daemon = nil
	n.crash.held = true
	n.crash.point = ""
	close(n.crash.crashed)
}
