// Package controlplane runs a real etcd and kube-apiserver on loopback for tests.
//
// By default there is no controller manager, scheduler or kubelet: objects are stored, validated,
// admitted and authorized exactly as in a cluster, but mostly nothing reconciles them (a DaemonSet
// creates no pods, a namespace is never finalized). The one exception is an in-process stand-in
// for the disruption controller, which keeps PodDisruptionBudget status current so that evictions
// behave as in a cluster. The ServiceAccount admission plugin is off, so pods need no "default"
// ServiceAccount. Pair it with the kubelet package for nodes and pods.
//
// With Options.Cluster it is a cluster for real kubelets instead: kube-scheduler and
// kube-controller-manager run beside the API server (cluster.go), with the Node authorizer,
// NodeRestriction and the ServiceAccount admission plugin on.
//
// The binaries come from hack/build-controlplane.sh and, for Cluster, hack/build-nodestack.sh
// (built once into ~/.cache/nodeconfd).
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// readyTimeout bounds each wait for a process to become ready.
const readyTimeout = 90 * time.Second

// Options configure Start.
type Options struct {
	// Dir is a scratch folder for etcd's data, certificates, kubeconfigs and process logs
	// (etcd.log, kube-apiserver.log), e.g. t.TempDir(). Required.
	Dir string
	// BinDir holds kube-apiserver, kubectl and etcd. Empty: run hack/build-controlplane.sh.
	BinDir string
	// CRDDir: every CustomResourceDefinition in the YAML files there is installed and
	// awaited. Empty: <repo>/manifests.
	CRDDir string
	// NoCRDs skips installing CRDs.
	NoCRDs bool
	// Log receives progress and timings (and build output). Nil discards them.
	Log io.Writer
	// PriorityAndFairness runs kube-apiserver with API Priority and
	// Fairness, as real clusters do (requests queue per priority level and
	// flow); off, it refuses what exceeds its in-flight limits with 429s.
	PriorityAndFairness bool
	// Nice is the nice value etcd and kube-apiserver run at (0: the test
	// binary's). The fleet benchmark runs them at -10 (about nine times the
	// CPU share of a process at 0): on a real cluster the daemons run on
	// their own nodes, here thousands of simulated ones share the cores with
	// the control plane, and their start-up would take the CPU whose lack
	// the API server's latency then shows.
	Nice int
	// Cluster runs kube-scheduler and kube-controller-manager (cluster.go) in place of the
	// in-process disruption controller, for nodes with real kubelets.
	Cluster bool
	// NodeBinDir holds kube-scheduler and kube-controller-manager for Cluster. Empty: run
	// hack/build-nodestack.sh.
	NodeBinDir string
}

// ControlPlane is a running etcd and kube-apiserver. Stop it when done.
type ControlPlane struct {
	opts       Options
	binDir     string
	nodeBinDir string
	pki        *pki
	etcdPort   int
	apiPort    int
	cfg        *rest.Config
	kubeconfig string

	mu                sync.Mutex // guards the processes and stopped
	etcd              *process
	apiserver         *process
	scheduler         *process // with Options.Cluster
	controllerManager *process // with Options.Cluster
	stopped           bool

	stopControllers context.CancelFunc
	controllersDone chan struct{}
}

// Start launches etcd and kube-apiserver on free loopback ports, waits until the API server is
// ready and the CRDs are established. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	if opts.Dir == "" {
		return nil, errors.New("starting control plane: Options.Dir is required")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	begin := time.Now()
	binDir, err := resolveBinDir(ctx, opts.BinDir, opts.Log)
	if err != nil {
		return nil, err
	}
	c := &ControlPlane{opts: opts, binDir: binDir}
	if opts.Cluster {
		if c.nodeBinDir, err = resolveNodeBinDir(ctx, opts.NodeBinDir, opts.Log); err != nil {
			return nil, err
		}
	}
	built := time.Since(begin)

	if err := c.start(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	ready := time.Since(begin)
	if err := c.startControllers(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}

	if !opts.NoCRDs {
		crdDir := opts.CRDDir
		if crdDir == "" {
			root, err := RepoRoot()
			if err != nil {
				return nil, errors.Join(err, c.Stop())
			}
			crdDir = filepath.Join(root, "manifests")
		}
		if err := installCRDs(ctx, c.cfg, crdDir); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	fmt.Fprintf(opts.Log, "controlplane: ready in %s (binaries %s, etcd+kube-apiserver %s, CRDs %s), API server %s\n",
		round(time.Since(begin)), round(built), round(ready-built), round(time.Since(begin)-ready), c.cfg.Host)
	return c, nil
}

// start writes the certificates and kubeconfig and starts both processes.
func (c *ControlPlane) start(ctx context.Context) error {
	pkiDir := filepath.Join(c.opts.Dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", pkiDir, err)
	}
	var err error
	if c.pki, err = newPKI(); err != nil {
		return err
	}
	if err := c.pki.write(pkiDir); err != nil {
		return err
	}
	if c.etcdPort, err = freePort(); err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	if c.apiPort, err = freePort(); err != nil {
		return err
	}
	c.cfg = &rest.Config{
		Host: loopbackURL("https", c.apiPort),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.pki.caCert,
			CertData: c.pki.adminCert,
			KeyData:  c.pki.adminKey,
		},
		QPS:   200,
		Burst: 400,
	}
	c.kubeconfig = filepath.Join(c.opts.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.kubeconfig, c.cfg.Host, c.pki.caCert, "admin", c.pki.adminCert, c.pki.adminKey, ""); err != nil {
		return err
	}
	if c.opts.Cluster {
		if err := c.writeClusterPKI(); err != nil {
			return err
		}
	}

	peerURL := loopbackURL("http", peerPort)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.etcd, err = startProcess(c.opts.Dir, "etcd", filepath.Join(c.binDir, "etcd"), c.opts.Nice, []string{
		"--name=testbed",
		"--data-dir=" + filepath.Join(c.opts.Dir, "etcd-data"),
		"--listen-client-urls=" + loopbackURL("http", c.etcdPort),
		"--advertise-client-urls=" + loopbackURL("http", c.etcdPort),
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=testbed=" + peerURL,
		"--unsafe-no-fsync", // test data; makes writes much faster
		"--log-level=warn",
	})
	if err != nil {
		return err
	}
	if err := waitHealthy(ctx, c.etcd, http.DefaultClient, loopbackURL("http", c.etcdPort)+"/health"); err != nil {
		return err
	}
	return c.startAPIServerLocked(ctx)
}

// FeatureGates are the bed's API server's feature gates beyond the
// defaults of its release.
const FeatureGates = "NodeLifecycleConditions=true"

// startAPIServerLocked starts kube-apiserver on c.apiPort and waits for /readyz. c.mu is held.
func (c *ControlPlane) startAPIServerLocked(ctx context.Context) error {
	pkiDir := filepath.Join(c.opts.Dir, "pki")
	var err error
	c.apiserver, err = startProcess(c.opts.Dir, "kube-apiserver", filepath.Join(c.binDir, "kube-apiserver"), c.opts.Nice, append([]string{
		"--etcd-servers=" + loopbackURL("http", c.etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.apiPort),
		"--cert-dir=" + pkiDir,
		"--tls-cert-file=" + filepath.Join(pkiDir, "server.crt"),
		"--tls-private-key-file=" + filepath.Join(pkiDir, "server.key"),
		"--client-ca-file=" + filepath.Join(pkiDir, "ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(pkiDir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pkiDir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// A loopback address is not a valid endpoint for the kubernetes Service.
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=" + strconv.FormatBool(c.opts.PriorityAndFairness),
		// The Node lifecycle conditions the daemon writes (--node-lifecycle-conditions):
		// alpha in 1.37, the bed's version, and off by default.
		"--feature-gates=" + FeatureGates,
	}, c.apiServerModeArgs()...))
	if err != nil {
		return err
	}
	transport, err := rest.TransportFor(c.cfg)
	if err != nil {
		return fmt.Errorf("building API client transport: %w", err)
	}
	client := &http.Client{Transport: transport, Timeout: 2 * time.Second}
	return waitHealthy(ctx, c.apiserver, client, c.cfg.Host+"/readyz")
}

// apiServerModeArgs are kube-apiserver's flags that differ with Options.Cluster.
func (c *ControlPlane) apiServerModeArgs() []string {
	if c.opts.Cluster {
		return c.clusterAPIServerArgs()
	}
	return []string{
		"--authorization-mode=RBAC",
		// No controller manager creates "default" ServiceAccounts, which this plugin requires.
		"--disable-admission-plugins=ServiceAccount",
	}
}

// startControllers runs the controllers until Stop: kube-scheduler and
// kube-controller-manager with Options.Cluster, else the in-process ones.
func (c *ControlPlane) startControllers(ctx context.Context) error {
	if c.opts.Cluster {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.startClusterLocked(ctx)
	}
	client, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stopControllers = cancel
	c.controllersDone = make(chan struct{})
	go func() {
		defer close(c.controllersDone)
		runDisruptionController(ctx, client)
	}()
	return nil
}

// waitHealthy polls url until it answers 200, the process exits, or readyTimeout passes.
func waitHealthy(ctx context.Context, p *process, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", p.name, err)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body)
		} else {
			last = err.Error()
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s at %s: %w (last answer: %s); log %s ends with:\n%s",
				p.name, url, ctx.Err(), last, p.logPath, p.tail())
		case <-tick.C:
		}
	}
}

// RestConfig returns an admin (system:masters) client config. Callers may modify the copy.
func (c *ControlPlane) RestConfig() *rest.Config { return rest.CopyConfig(c.cfg) }

// Kubeconfig returns the path of an admin kubeconfig file, for kubectl and daemon processes.
func (c *ControlPlane) Kubeconfig() string { return c.kubeconfig }

// KubectlPath returns the path of the kubectl binary matching the API server.
func (c *ControlPlane) KubectlPath() string { return filepath.Join(c.binDir, "kubectl") }

// Dir returns the scratch folder, which holds etcd.log and kube-apiserver.log.
func (c *ControlPlane) Dir() string { return c.opts.Dir }

// RestartAPIServer stops kube-apiserver (SIGTERM; SIGKILL after 2s, as open watches hold up a
// graceful shutdown) and starts it again on the same port with the same certificates; etcd and
// its data are untouched. Existing clients reconnect by themselves
// (watches end and informers relist).
func (c *ControlPlane) RestartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("restarting kube-apiserver: control plane stopped")
	}
	begin := time.Now()
	c.apiserver.stop(apiserverStopGrace)
	stopped := time.Since(begin)
	if err := c.startAPIServerLocked(ctx); err != nil {
		return fmt.Errorf("restarting kube-apiserver: %w", err)
	}
	fmt.Fprintf(c.opts.Log, "controlplane: kube-apiserver restarted in %s (stop %s)\n", round(time.Since(begin)), round(stopped))
	return nil
}

// Stop ends the in-process controllers, kube-apiserver and etcd (SIGTERM, then SIGKILL after a
// timeout; an error only if etcd had to be killed). It is safe to call more than once; the
// scratch folder is left for the caller.
func (c *ControlPlane) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	begin := time.Now()
	if c.stopControllers != nil {
		c.stopControllers()
		<-c.controllersDone
	}
	c.stopClusterLocked()
	c.apiserver.stop(apiserverStopGrace)
	var err error
	if c.etcd.stop(etcdStopGrace) {
		err = fmt.Errorf("stopping control plane: etcd did not exit within %s of SIGTERM; killed", etcdStopGrace)
	}
	fmt.Fprintf(c.opts.Log, "controlplane: stopped in %s\n", round(time.Since(begin)))
	return err
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
