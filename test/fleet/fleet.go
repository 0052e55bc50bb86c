// Package fleet simulates a fleet of nodes on the test bed's real
// kube-apiserver and etcd, to measure what the daemons of a whole cluster
// cost the API server: watches held, requests while idle, the start-up
// storm, and a rolling update paced by `nodeconfd controller` (run as a
// process of its own, pool.go): a worker MachineConfig changed, the pool's
// config rendered and handed to at most the pool's maxUnavailable nodes at
// a time.
//
// Each simulated node is a Node object (registered Ready, as a kubelet
// would, then left alone: the stand-in sends no heartbeats, so that every
// request measured is a daemon's), the daemon's Pod object (what the
// DaemonSet would create) and a real daemon loop: daemon.Daemon with the
// daemon's own API client, watches, drainer, Events and
// status writer, authenticated with a token bound to its pod (so the
// admission policies judge every write as in a cluster), over a connection
// of its own. Only the host is simulated: an in-memory filesystem and the
// recording systemd fake, whose reboot stops the daemon and starts a new
// one (new client, new connection) after Options.RebootTime.
//
// Run it with `make bench-fleet N=1000 S=10` (see fleet_test.go).
package fleet

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Options size the fleet.
type Options struct {
	// Nodes is the number of simulated nodes (N).
	Nodes int
	// RebootTime is how long a simulated reboot keeps the daemon down.
	RebootTime time.Duration
	// StartJitter is the daemons' --start-jitter, UpdateSpread their
	// --update-spread.
	StartJitter, UpdateSpread time.Duration
	// Log receives progress lines.
	Log io.Writer
	// DaemonLog receives the daemons' logs at DaemonLogLevel (the zero
	// value: info; a fleet's runs warnings).
	DaemonLog      io.Writer
	DaemonLogLevel zapcore.Level
	// TraceStatus, when set, receives the status writes of the first node.
	TraceStatus io.Writer
	// APIServerProfile, when set, is where a CPU profile of kube-apiserver
	// over the roll's first 30 s is written.
	APIServerProfile string
}

// Fleet is the simulated nodes on one bed.
type Fleet struct {
	bed     *testbed.Bed
	opts    Options
	nodes   []*node
	counter *counter
	log     *zap.Logger
	metrics *scraper
	track   *tracker
	hist    *history // history.go

	// baseWatches are the watches open before the daemons start (the API
	// server's own, the benchmark's).
	baseWatches float64

	mu      sync.Mutex
	running bool
}

// setupParallel bounds the requests in flight while the fleet is set up.
const setupParallel = 16

// New registers the fleet's nodes at config base (the pool's rendered
// config: the controller made it) and
// their daemon pods and tokens; no daemon runs yet.
func New(ctx context.Context, bed *testbed.Bed, opts Options, base string) (*Fleet, error) {
	f := &Fleet{bed: bed, opts: opts, counter: newCounter()}
	f.log = daemonLogger(opts.DaemonLog, opts.DaemonLogLevel)
	var err error
	if f.metrics, err = newScraper(bed.CP); err != nil {
		return nil, err
	}
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Get(ctx, base, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("reading the nodes' first config %s: %w", base, err)
	}
	f.nodes = make([]*node, opts.Nodes)
	err = parallel(ctx, opts.Nodes, setupParallel, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("fleet-%05d", i)
		cfg, err := f.register(ctx, name, base)
		if err != nil {
			return err
		}
		f.nodes[i] = newNode(f, name, cfg)
		if i == 0 && opts.TraceStatus != nil {
			f.nodes[i].trace = &statusTrace{w: opts.TraceStatus, node: name}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f.track, err = startTracker(ctx, bed); err != nil {
		return nil, err
	}
	if f.hist, err = startHistory(ctx, bed); err != nil {
		return nil, err
	}
	return f, nil
}

// register creates the Node, Ready, annotated at config base, and the
// daemon's pod, and returns the daemon's client config: a token bound to
// its pod.
func (f *Fleet) register(ctx context.Context, name, base string) (*rest.Config, error) {
	nodes := f.bed.Kube.CoreV1().Nodes()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
			"node-role.kubernetes.io/worker": ""},
		Annotations: map[string]string{names.CurrentConfig: base, names.DesiredConfig: base, names.State: "Done"}}}
	created, err := nodes.Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("registering node %s: %w", name, err)
	}
	now := metav1.Now()
	created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("making node %s Ready: %w", name, err)
	}
	pod, err := f.bed.DaemonPod(ctx, name)
	if err != nil {
		return nil, err
	}
	return f.bed.CP.RestConfigForPod(ctx, pod)
}

// Start starts every daemon at once.
func (f *Fleet) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running = true
	for _, n := range f.nodes {
		go n.run(ctx)
	}
}

// Stop stops every daemon and waits for them.
func (f *Fleet) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		return
	}
	for _, n := range f.nodes {
		n.stop()
	}
	f.running = false
}

// Names are the nodes' names.
func (f *Fleet) Names() []string {
	names := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		names[i] = n.name
	}
	return names
}

// Roll sets the desired config of nodes to config (all at once, as an
// administrator would) and waits until each reports Updated at it. It
// returns each node's time from the annotation to Updated.
func (f *Fleet) Roll(ctx context.Context, nodes []string, config string) (map[string]time.Duration, error) {
	if err := f.bed.CreateConfig(ctx, testbed.MachineConfig(config, testbed.Ignition(map[string]string{
		"/etc/fleet/" + config + ".conf": "config " + config + "\n"}))); err != nil {
		return nil, err
	}
	start := time.Now()
	wait := f.track.expect(nodes, config)
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, names.DesiredConfig, config))
	err := parallel(ctx, len(nodes), setupParallel, func(ctx context.Context, i int) error {
		_, err := f.bed.Kube.CoreV1().Nodes().Patch(ctx, nodes[i], "application/merge-patch+json", patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("annotating the nodes: %w", err)
	}
	done, err := wait(ctx)
	if err != nil {
		return nil, err
	}
	took := map[string]time.Duration{}
	for n, at := range done {
		took[n] = at.Sub(start)
	}
	return took, nil
}

// parallel runs fn for 0..n-1, at most width at once; the first error
// stops the rest.
func parallel(ctx context.Context, n, width int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, width)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, i); err != nil {
				select {
				case errs <- err:
				default:
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}
