package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ControllerName is the controller's Deployment (manifests/05-controller.yaml).
const ControllerName = "nodeconfd-controller"

// Controller is one replica of `nodeconfd controller` run from the built
// binary with the manifests' ServiceAccount and a token bound to a Pod of
// its own, as the Deployment's pod would run it.
type Controller struct {
	Name    string
	logPath string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartController starts a replica named name whose pod is bound to node
// (a Node object must exist: the token's node claim comes from it). Extra
// arguments are added to its command line.
func (b *Bed) StartController(ctx context.Context, name, node string, extra ...string) (*Controller, error) {
	dep, err := b.Kube.AppsV1().Deployments(Namespace).Get(ctx, ControllerName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Deployment %s/%s: %w", Namespace, ControllerName, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: dep.Spec.Template.Labels},
		Spec:       *dep.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	pods := b.Kube.CoreV1().Pods(Namespace)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = pods.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("creating the controller's pod %s: %w", name, err)
	}
	kubeconfig, err := b.CP.KubeconfigForPod(ctx, created)
	if err != nil {
		return nil, err
	}
	c := &Controller{Name: name, logPath: filepath.Join(b.Dir, "controller-"+name+".log")}
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// No metrics server: several controllers share the host's network here; test/cluster
	// scrapes the shipped Deployment's.
	args := append([]string{"controller", "--kubeconfig", kubeconfig, "--identity", name, "--namespace", Namespace,
		"--metrics-address="},
		extra...)
	cmd := exec.Command(b.Daemon, args...)
	cmd.Env = append(os.Environ(), "NODE_NAME="+node)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	c.cmd, c.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(c.exited) }()
	return c, nil
}

// Stop stops the replica as a pod deletion would (SIGTERM, then SIGKILL
// after 30 s); Kill as a crash or a lost node would.
func (c *Controller) Stop() { c.signal(syscall.SIGTERM, 30*time.Second) }

// Kill kills the replica at once.
func (c *Controller) Kill() { c.signal(syscall.SIGKILL, 5*time.Second) }

func (c *Controller) signal(sig syscall.Signal, grace time.Duration) {
	c.mu.Lock()
	cmd := c.cmd
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-c.exited:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-c.exited
	}
}

// PID is the replica's process id, 0 once stopped: a benchmark reads its
// CPU time and memory from /proc.
func (c *Controller) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Log is the replica's log so far.
func (c *Controller) Log() string {
	data, _ := os.ReadFile(c.logPath)
	return string(data)
}

// ControllerNodeLabel sets a node aside for the controller's pods (the
// third term of its required node affinity: manifests/05-controller.yaml),
// as an administrator of a cluster whose control plane runs no pods does.
// The node stays in the worker pool (phases/pools), where the bed's
// configs are.
const ControllerNodeLabel = "node-restriction.kubernetes.io/nodeconfd-controller"

// LabelControllerNode puts ControllerNodeLabel on node, waiting for its
// kubelet to register it, so that the controller's pods can be scheduled
// there.
func (b *Bed) LabelControllerNode(ctx context.Context, node string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{ControllerNodeLabel: ""}}})
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := b.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil // not registered yet
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("labelling node %s %s for the controller's pods: %w", node, ControllerNodeLabel, err)
	}
	return nil
}
