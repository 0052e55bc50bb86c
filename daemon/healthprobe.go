package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/osupdate"
	"github.com/nodeconfd/nodeconfd/daemon/systemd"
	"github.com/nodeconfd/nodeconfd/names"
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

// Command runs argv chrooted into the root mount, as the OS tools run: no
// shell, a clean environment, its own timeout. The error says how it ended
// and carries the end of its output.
func (p *HealthProbe) Command(ctx context.Context, argv []string) error {
	timeout := p.CommandTimeout
	if timeout <= 0 {
		timeout = DefaultHealthCommandTimeout
	}
	// The OS tools' runner: chrooted, a clean environment, its own process
	// group and cgroup, killed whole at the timeout and when it ends.
	out, err := osupdate.Chroot{Root: p.Root, Timeout: timeout, Cgroup: true}.Run(ctx, argv[0], argv[1:]...)
	if err == nil {
		return nil
	}
	// The output goes into the status: no control characters.
	if s := osupdate.Printable(string(out)); s != "" {
		if len(s) > 256 {
			s = "..." + s[len(s)-253:]
		}
		return fmt.Errorf("%w; output: %s", err, s)
	}
	return err
}

// SetFailedConfig writes the node's failedConfig annotation, only while
// the node is still given that config: a failure report names the config
// the node was itself given (the admission policy refuses any other), and
// once the cluster moved the node on (a new desiredConfig during the
// rollback) the failed config holds nobody back any more.
func (p *HealthProbe) SetFailedConfig(ctx context.Context, name string) error {
	if n, ok := p.Objects.Node(); ok && n.Annotations[names.DesiredConfig] != name {
		return nil
	}
	return p.API.SetFailedConfig(ctx, name)
}

// ClearFailedConfig removes the node's failedConfig annotation when it
// names config (that config passed the gate now).
func (p *HealthProbe) ClearFailedConfig(ctx context.Context, config string) error {
	if n, ok := p.Objects.Node(); !ok || n.Annotations[names.FailedConfig] != config {
		return nil
	}
	return p.API.ClearFailedConfig(ctx)
}

// FailedOn names another node on which config failed the health gate.
func (p *HealthProbe) FailedOn(ctx context.Context, config string) (string, error) {
	return p.API.FailedOn(ctx, config)
}

// WaitNotFailedOn waits until no other node records config as failed.
func (p *HealthProbe) WaitNotFailedOn(ctx context.Context, config string, failedOn func(node string)) error {
	return p.API.WaitNotFailedOn(ctx, config, failedOn)
}
