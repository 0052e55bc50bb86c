package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/systemd"
	"github.com/nodeconfd/nodeconfd/phases"
)

// UnitStates reads units' states (systemd.DBus).
type UnitStates interface {
	UnitState(ctx context.Context, unit string) (systemd.UnitState, error)
}

// HealthProbe is the health gate's view of the node (phases.HealthProbe):
// the Node's Ready condition from the daemon's Node watch, units through
// systemd's D-Bus API, the check command chrooted into the root mount.
type HealthProbe struct {
	Objects Watcher
	API     *kube.Client
	Units   UnitStates
	// Root is the root mount the check command runs chrooted in.
	Root string
	// CommandTimeout bounds one run of the check command; 0 means
	// DefaultHealthCommandTimeout.
	CommandTimeout time.Duration
}

var _ phases.HealthProbe = (*HealthProbe)(nil)

// DefaultHealthCommandTimeout bounds one run of the check command.
const DefaultHealthCommandTimeout = time.Minute

// NodeReady reads the Ready condition the kubelet posted.
func (p *HealthProbe) NodeReady(_ context.Context, since time.Time) (bool, string, error) {
	n, ok := p.Objects.Node()
	if !ok {
		return false, "", errors.New("the Node is not in the watch cache")
	}
	return nodeReady(n, since)
}

func nodeReady(n *corev1.Node, since time.Time) (bool, string, error) {
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		switch {
		case c.Status != corev1.ConditionTrue:
			return false, fmt.Sprintf("Ready is %s (%s: %s)", c.Status, c.Reason, c.Message), nil
		case !since.IsZero() && c.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)):
			return false, "the kubelet has not reported since the reboot", nil
		}
		return true, "", nil
	}
	return false, "the kubelet has not reported a Ready condition", nil
}

// Unit reads the unit's state over D-Bus.
func (p *HealthProbe) Unit(ctx context.Context, name string) (phases.UnitHealth, error) {
	st, err := p.Units.UnitState(ctx, name)
	if err != nil {
		return phases.UnitHealth{}, err
	}
	return phases.UnitHealth{LoadState: st.LoadState, ActiveState: st.ActiveState, SubState: st.SubState, Restarts: st.Restarts}, nil
}

// healthBinPath is where a command named without a folder is looked up.
const healthBinPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Command runs argv chrooted into the root mount, as the OS tools run: no
// shell, a clean environment, its own timeout. The error says how it ended
// and carries the end of its output.
func (p *HealthProbe) Command(ctx context.Context, argv []string) error {
	timeout := p.CommandTimeout
	if timeout <= 0 {
		timeout = DefaultHealthCommandTimeout
	}
	prog, err := p.find(argv[0])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + healthBinPath, "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: p.Root, Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("timed out after %s", timeout)
	}
	msg := err.Error()
	if s := strings.Join(strings.Fields(out.String()), " "); s != "" {
		if len(s) > 256 {
			s = "..." + s[len(s)-253:]
		}
		msg += ": " + s
	}
	return errors.New(msg)
}

// find resolves argv[0] inside the root: a path as it is, a bare name on
// healthBinPath.
func (p *HealthProbe) find(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	root, err := os.OpenRoot(p.Root)
	if err != nil {
		return "", fmt.Errorf("opening the root mount %s: %w", p.Root, err)
	}
	defer root.Close()
	for _, dir := range strings.Split(healthBinPath, ":") {
		full := path.Join(dir, name)
		if _, err := root.Lstat(strings.TrimPrefix(full, "/")); err == nil {
			return full, nil
		}
	}
	return "", fmt.Errorf("%s is not installed on the node: %w", name, fs.ErrNotExist)
}

// SetFailedConfig writes the node's failedConfig annotation.
func (p *HealthProbe) SetFailedConfig(ctx context.Context, name string) error {
	return p.API.SetFailedConfig(ctx, name)
}

// ClearFailedConfig removes the node's failedConfig annotation when it
// names config (that config passed the gate now).
func (p *HealthProbe) ClearFailedConfig(ctx context.Context, config string) error {
	if n, ok := p.Objects.Node(); !ok || n.Annotations[kube.FailedConfig] != config {
		return nil
	}
	return p.API.ClearFailedConfig(ctx)
}

// FailedOn names another node on which config failed the health gate.
func (p *HealthProbe) FailedOn(ctx context.Context, config string) (string, error) {
	return p.API.FailedOn(ctx, config)
}
