package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
	"github.com/nodeconfd/nodeconfd/test/testbed/images"
	"github.com/nodeconfd/nodeconfd/test/testbed/kubenode"
	"github.com/nodeconfd/nodeconfd/test/testbed/nspawn"
)

// cluster is what a bed of real nodes (StartCluster) adds to a bed.
type cluster struct {
	images    images.Set
	registry  *registry
	nodeStack string // hack/build-nodestack.sh's folder
	rootImage string // hack/node-image-kube.sh's folder
	bridge    *bridge

	mu    sync.Mutex
	nodes int // nodes added so far: the next one's index
}

// StartCluster starts a bed for real nodes (AddKubeNode): the control plane
// runs kube-scheduler and kube-controller-manager beside the API server
// (controlplane.Options.Cluster), the bed's registry runs on its bridge, the
// images the nodes run are built and pushed there (the sandbox, a workload,
// the daemon's release image index), and the release manifest
// (hack/release, manifests/ with the pushed image) is applied, so the
// DaemonSet runs the daemon, pulled from the registry, on every node that
// registers. The nodes' network is a host bridge of the bed's own.
func StartCluster(ctx context.Context, dir string, log io.Writer) (*Bed, error) {
	repo, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	c := &cluster{}
	if c.nodeStack, err = controlplane.RunHackScript(ctx, "build-nodestack.sh", log); err != nil {
		return nil, err
	}
	if c.rootImage, err = controlplane.RunHackScript(ctx, "node-image-kube.sh", log); err != nil {
		return nil, err
	}
	if c.bridge, err = newBridge(); err != nil {
		return nil, err
	}
	release, err := c.publish(ctx, repo, dir, log)
	if err != nil {
		return nil, errors.Join(err, c.stop())
	}
	b, err := startWith(ctx, dir, log, controlplane.Options{Cluster: true, NodeBinDir: c.nodeStack}, release)
	if err != nil {
		return nil, errors.Join(err, c.stop())
	}
	b.cluster = c
	return b, nil
}

// publish starts the registry, pushes the images and writes the release
// manifest for the pushed daemon image; it returns the manifest's path.
func (c *cluster) publish(ctx context.Context, repo, dir string, log io.Writer) (string, error) {
	start := time.Now()
	var err error
	addr := netip.AddrPortFrom(c.bridge.Gateway(), RegistryPort)
	if c.registry, err = startRegistry(ctx, filepath.Join(dir, "registry"), addr, log); err != nil {
		return "", err
	}
	if c.images, err = images.Build(ctx, repo, filepath.Join(dir, "images"), c.registry.host); err != nil {
		return "", err
	}
	release := filepath.Join(dir, "nodeconfd-release.yaml")
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/release", "-image", c.images.DaemonRef, "-out", release)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("writing the release manifest: %w\n%s", err, out)
	}
	fmt.Fprintf(log, "testbed: registry %s up, images pushed (daemon %s@%s), release written in %s\n",
		c.registry.host, c.images.DaemonRef, c.images.DaemonDigest, time.Since(start).Round(100*time.Millisecond))
	return release, nil
}

// Images returns the images a cluster bed's nodes pull (StartCluster).
func (b *Bed) Images() images.Set { return b.cluster.images }

// KubeNode is a real node: a systemd container with containerd and a
// kubelet (package kubenode), registered with its own credentials.
type KubeNode struct {
	Name string
	Sys  *nspawn.Node
	// IP is the node's address, its InternalIP.
	IP      netip.Addr
	console *os.File

	stopOnce sync.Once
	stopErr  error
}

// AddKubeNodes starts the named nodes at once (AddKubeNode each) and runs
// then, when set, for each node once it started. It returns the nodes that
// started, also when others failed (their errors joined), so that the
// caller stops every one of them.
func (b *Bed) AddKubeNodes(ctx context.Context, names []string, then func(name string) error) (map[string]*KubeNode, error) {
	nodes := map[string]*KubeNode{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Go(func() {
			n, err := b.AddKubeNode(ctx, name)
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			nodes[name] = n
			mu.Unlock()
			if then != nil {
				errs[i] = then(name)
			}
		})
	}
	wg.Wait()
	return nodes, errors.Join(errs...)
}

// AddKubeNode starts node name on a cluster bed. It returns once the
// node's systemd is running; the kubelet registers the node soon after
// (WaitNodeReady).
func (b *Bed) AddKubeNode(ctx context.Context, name string) (*KubeNode, error) {
	c := b.cluster
	if c == nil {
		return nil, errors.New("adding a real node: the bed is not a cluster (StartCluster)")
	}
	c.mu.Lock()
	index := c.nodes
	c.nodes++
	c.mu.Unlock()
	kubeconfig, err := b.CP.NodeKubeconfig(name, "https://"+kubenode.ServiceIP+":443")
	if err != nil {
		return nil, err
	}
	cfg := kubenode.Config{
		Name: name, IP: c.bridge.addr(index), Gateway: c.bridge.Gateway(), PrefixLen: c.bridge.prefix.Bits(),
		APIPort: b.CP.APIPort(), PodCIDR: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(index), 0}), 24),
		CACert: b.CP.CACert(), Kubeconfig: kubeconfig, SandboxImage: c.images.Pause, Registry: c.registry.host,
	}
	files, err := kubenode.Files(cfg)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(b.Dir, "kubenode-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// nspawn's own messages and the guest's console.
	console, err := os.Create(filepath.Join(dir, "console.log"))
	if err != nil {
		return nil, err
	}
	sys, err := nspawn.Start(ctx, nspawn.Options{
		Name: name, ImageDir: c.rootImage, WorkDir: dir, Log: console,
		Setup:  func(root string) error { return kubenode.Write(root, files) },
		Bridge: c.bridge.name, BindRO: kubenode.Binds(c.nodeStack), LegacyCgroups: true,
	})
	if err != nil {
		console.Close()
		return nil, err
	}
	if err := sys.WaitBoot(ctx, 1); err != nil {
		defer console.Close()
		return nil, errors.Join(fmt.Errorf("%w; console (%s) ends with:\n%s", err, console.Name(), tail(console.Name())),
			sys.Stop(context.Background()))
	}
	return &KubeNode{Name: name, Sys: sys, IP: cfg.IP, console: console}, nil
}

// Stop powers the node off; once, however often it is called (a test may
// take a node out before its cleanup stops every node). Its Node object
// stays, as a powered-off machine's does.
func (n *KubeNode) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		n.stopErr = n.Sys.Stop(ctx)
		n.console.Close()
	})
	return n.stopErr
}

// tail returns the end of a log file, for errors.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func (c *cluster) stop() error {
	if c == nil {
		return nil
	}
	c.registry.stop()
	return c.bridge.remove()
}

// ClusterMain is Main for a test binary whose tests share one cluster bed
// (StartCluster). The first run on a machine builds the node stack and the
// real-node image (hack/build-nodestack.sh, hack/node-image-kube.sh), which
// takes many minutes; later runs find them cached.
func ClusterMain(m *testing.M, prefix string, use func(*Bed)) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, err := StartCluster(ctx, dir, os.Stderr)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the cluster test bed:", err)
		os.Exit(1)
	}
	use(b)
	code := m.Run()
	b.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Registry returns a cluster bed's registry, host:port: a test pushes
// images of its own there (images.Kured).
func (b *Bed) Registry() string { return b.cluster.registry.host }
