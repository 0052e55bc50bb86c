package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/test/testbed/kubelet"
	"github.com/nodeconfd/nodeconfd/test/testbed/nspawn"
	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

// TestConfigPattern is the test bed's --allowed-config-pattern: tests name
// their configs rendered-<test>-<x> (the hostile corpus hostile-<class>-<x>)
// on nodes of pool worker, so the default (rendered-<pool>-…) would refuse
// them.
const TestConfigPattern = "^(rendered|hostile)-.+$"

// Node is one test node: a systemd container, its stand-in kubelet, and the
// daemon, stopped when the node goes down and started once it is back.
type Node struct {
	Name    string
	Sys     *nspawn.Node
	Kubelet *kubelet.Kubelet
	bed     *Bed
	args    []string
	logPath string
	// MetricsAddr is the daemon's /metrics and /healthz address.
	MetricsAddr string
	// Kubeconfig is the daemon's kubeconfig: a token bound to its pod.
	Kubeconfig string

	mu      sync.Mutex
	daemon  *exec.Cmd
	exited  chan struct{}
	stopped bool
	starts  int
	crash   crashState
	// cgroup and bin, when set, are where and from what copy of the
	// binary the daemon runs (NodeOptions.Cgroup).
	cgroup *Cgroup
	bin    string
}

// NodeOptions adjusts a test node.
type NodeOptions struct {
	// ExtraArgs are added to the daemon's command line.
	ExtraArgs []string
	// NoDaemon leaves the daemon stopped (tests start it with StartDaemon).
	NoDaemon bool
	// OS, if set, installs the fake rpm-ostree and/or bootc (package
	// osfake) with a booted deployment; nodes have no OS updater otherwise.
	OS *osfake.Options
	// Labels are the Node's labels at registration (node-role, zone).
	Labels map[string]string
	// Cgroup, if set, runs the daemon in that cgroup from its first
	// instruction, from a copy of the binary of its own that is not in the
	// page cache yet, as a container runs from its image: the cgroup is
	// then charged with all the memory the daemon costs.
	Cgroup *Cgroup
	// ContainerRuntimeVersion is what the stand-in kubelet reports as the
	// Node's containerRuntimeVersion (kubelet.Options).
	ContainerRuntimeVersion string
	// Setup, if set, adds files to the node's root before its first boot
	// (after the OS fake's, with OS).
	Setup func(root string) error
}

// AddNode starts a node named name with its kubelet and daemon. The daemon
// runs with the manifests' ServiceAccount and a token bound to its own Pod on
// the node (DaemonKubeconfig), so RBAC and the admission policy hold it to
// what a cluster grants its pod. Tests name configs freely, so the daemon
// accepts every rendered-* and hostile-* name (--allowed-config-pattern);
// opts.ExtraArgs may narrow it again.
func (b *Bed) AddNode(ctx context.Context, name string, opts NodeOptions) (*Node, error) {
	img, err := nspawn.Image(ctx)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(b.Dir, "node-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr, err := b.ports.addr()
	if err != nil {
		return nil, err
	}
	n := &Node{Name: name, bed: b, logPath: filepath.Join(dir, "daemon.log"), MetricsAddr: addr, cgroup: opts.Cgroup}
	if n.cgroup != nil {
		n.bin = filepath.Join(dir, "nodeconfd")
		if err := containerBinary(b.Daemon, n.bin); err != nil {
			return nil, err
		}
	}
	var kubeconfig string
	n.Kubelet, err = kubelet.Start(ctx, b.Kube, name, kubelet.Options{GracePeriodScale: 0.01, Labels: opts.Labels,
		ContainerRuntimeVersion: opts.ContainerRuntimeVersion})
	if err != nil {
		return nil, err
	}
	if kubeconfig, err = b.DaemonKubeconfig(ctx, name); err != nil {
		n.Kubelet.Stop()
		return nil, err
	}
	n.Kubeconfig = kubeconfig
	var setup func(root string) error
	if opts.OS != nil {
		bin, err := b.osFake(ctx)
		if err != nil {
			n.Kubelet.Stop()
			return nil, err
		}
		setup = func(root string) error { return osfake.Install(root, bin, *opts.OS) }
	}
	if extra := opts.Setup; extra != nil {
		first := setup
		setup = func(root string) error {
			if first != nil {
				if err := first(root); err != nil {
					return err
				}
			}
			return extra(root)
		}
	}
	n.Sys, err = nspawn.Start(ctx, nspawn.Options{
		Name: name, ImageDir: img, WorkDir: filepath.Join(dir, "sys"), Log: io.Discard, Setup: setup,
		OnDown: func() { _ = n.StopDaemon() },
		OnRunning: func() {
			if !opts.NoDaemon {
				if err := n.StartDaemon(); err != nil {
					fmt.Fprintf(b.Log, "node %s: starting daemon: %v\n", name, err)
				}
			}
		},
	})
	if err != nil {
		n.Kubelet.Stop()
		return nil, err
	}
	n.args = append([]string{"start", "--node-name", name, "--root-mount", n.Sys.Root,
		"--kubeconfig", kubeconfig, "--system-bus-address", n.Sys.BusAddress,
		"--metrics-address", addr, "--metrics-auth", "none", "--retry-initial", "1s", "--retry-max", "5s",
		"--allowed-config-pattern", TestConfigPattern, "--verify-rendered-configs=false", "--start-jitter", "0s",
		"--update-spread", "0s"}, opts.ExtraArgs...)
	if err := n.Sys.WaitRunning(ctx); err != nil {
		n.Stop(ctx)
		return nil, err
	}
	return n, nil
}

// StartDaemon starts the daemon process (as the kubelet starts the pod).
func (n *Node) StartDaemon() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped || n.daemon != nil || n.crash.held {
		return nil
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := n.daemonCommand()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Env = n.crash.env()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); n.exitedAt(cmd); close(exited) }()
	n.daemon, n.exited = cmd, exited
	n.starts++
	return nil
}

// StopDaemon stops the daemon as a pod deletion would: SIGTERM, then SIGKILL
// after 20 s.
func (n *Node) StopDaemon() error { return n.signalDaemon(syscall.SIGTERM, 20*time.Second) }

// KillDaemon kills the daemon with SIGKILL (a crash).
func (n *Node) KillDaemon() error { return n.signalDaemon(syscall.SIGKILL, 5*time.Second) }

func (n *Node) signalDaemon(sig syscall.Signal, grace time.Duration) error {
	n.mu.Lock()
	cmd, exited := n.daemon, n.exited
	n.daemon = nil
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
	}
	return nil
}

// DaemonStarts counts the daemon's starts.
func (n *Node) DaemonStarts() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.starts
}

// DaemonLog returns the daemon's log so far.
func (n *Node) DaemonLog() string {
	data, _ := os.ReadFile(n.logPath)
	return string(data)
}

// Stop stops the daemon, the node and its kubelet.
func (n *Node) Stop(ctx context.Context) {
	n.mu.Lock()
	n.stopped = true
	n.mu.Unlock()
	_ = n.StopDaemon()
	if n.Sys != nil {
		_ = n.Sys.Stop(ctx)
	}
	if n.Kubelet != nil {
		n.Kubelet.Stop()
	}
}

// Annotate merges annotations into the node.
func (n *Node) Annotate(ctx context.Context, ann map[string]string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	_, err := n.bed.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// SetDesired sets the node's desiredConfig annotation, as a rollout would.
func (n *Node) SetDesired(ctx context.Context, name string) error {
	return n.Annotate(ctx, map[string]string{"machineconfiguration.openshift.io/desiredConfig": name})
}

// Metric reads one counter of the daemon's /metrics (summed over labels).
func (n *Node) Metric(name string) (float64, error) {
	return scrape("http://"+n.MetricsAddr+"/metrics", name)
}
