// Package testbed puts the test bed's parts together for tests, benchmarks
// and the demo: a real control plane (etcd + kube-apiserver) with the
// manifests applied, and nodes that are real systemd containers, each with a
// stand-in kubelet and the daemon running as it would in its pod.
package testbed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// Namespace is the daemon's namespace (manifests/01-namespace.yaml).
const Namespace = "nodeconfd"

// Bed is one running test bed.
type Bed struct {
	CP   *controlplane.ControlPlane
	Kube kubernetes.Interface
	MCfg mcfgclient.Interface
	// Repo is the repository's root; Dir the bed's scratch folder.
	Repo, Dir string
	// Daemon is the built daemon binary.
	Daemon string
	Log    io.Writer

	osFakeOnce sync.Once
	osFakeBin  string
	osFakeErr  error
	// ports are the daemons' metrics ports (ports.go).
	ports portPool
	// cluster is set on a bed of real nodes (StartCluster).
	cluster *cluster
}

// Start builds the daemon, starts the control plane and applies manifests/.
func Start(ctx context.Context, dir string, log io.Writer) (*Bed, error) {
	return StartWith(ctx, dir, log, controlplane.Options{})
}

// StartWith is Start with the control plane's options cpo (its Dir and Log
// are the bed's).
func StartWith(ctx context.Context, dir string, log io.Writer, cpo controlplane.Options) (*Bed, error) {
	repo, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	return startWith(ctx, dir, log, cpo, filepath.Join(repo, "manifests"))
}

// startWith is StartWith applying manifests (a folder or a file: a cluster
// bed applies the release manifest, hack/release).
func startWith(ctx context.Context, dir string, log io.Writer, cpo controlplane.Options, manifests string) (*Bed, error) {
	repo, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "nodeconfd")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/nodeconfd")
	build.Dir = repo
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the daemon: %v\n%s", err, out)
	}
	cpo.Dir, cpo.Log = filepath.Join(dir, "cp"), log
	cp, err := controlplane.Start(ctx, cpo)
	if err != nil {
		return nil, err
	}
	b := &Bed{CP: cp, Repo: repo, Dir: dir, Daemon: bin, Log: log}
	if b.Kube, err = kubernetes.NewForConfig(cp.RestConfig()); err != nil {
		b.Stop()
		return nil, err
	}
	if b.MCfg, err = mcfgclient.NewForConfig(cp.RestConfig()); err != nil {
		b.Stop()
		return nil, err
	}
	if out, err := b.Kubectl(ctx, "apply", "-f", manifests); err != nil {
		b.Stop()
		return nil, fmt.Errorf("applying manifests: %v\n%s", err, out)
	}
	return b, nil
}

// Stop stops the control plane (and removes a cluster bed's bridge; its
// nodes must be stopped first).
func (b *Bed) Stop() {
	if b.CP != nil {
		_ = b.CP.Stop()
	}
	if err := b.cluster.stop(); err != nil {
		fmt.Fprintln(b.Log, err)
	}
}

// Kubectl runs the built kubectl against the bed as admin.
func (b *Bed) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, b.CP.KubectlPath(), append([]string{"--kubeconfig", b.CP.Kubeconfig()}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// RepoRoot finds the repository's root: the folder of go.mod above the
// working directory.
func RepoRoot() (string, error) { return controlplane.RepoRoot() }

// MachineConfig returns a rendered MachineConfig with the given Ignition
// JSON (verbatim) and OS fields.
func MachineConfig(name, ignition string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigSpec{
			Config: runtime.RawExtension{Raw: []byte(ignition)},
		},
	}
}

// CreateConfig creates a MachineConfig.
func (b *Bed) CreateConfig(ctx context.Context, mc *mcfgv1.MachineConfig) error {
	_, err := b.MCfg.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating MachineConfig %s: %w", mc.Name, err)
	}
	return nil
}
