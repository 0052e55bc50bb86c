package fleet

import (
	"context"
	"io"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// node is one simulated node: its host survives its daemon's restarts.
type node struct {
	f    *Fleet
	name string
	cfg  *rest.Config
	host *host
	sd   *systemdtest.Fake

	reboot chan struct{}
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	starts int
	// trace, when set, prints the node's status writes (trace.go).
	trace *statusTrace
	// started is when the daemon's current or last update wrote its first
	// status (Updated=False), on the daemon's side: the tracker's watch
	// of every MachineConfigNode lags under load.
	started  time.Time
	updating bool
}

// wrote notes a status the daemon wrote (or found at its start).
func (n *node) wrote(conds []metav1.Condition) {
	if n.trace != nil {
		n.trace.written(conds)
	}
	c := status.Find(conds, status.Updated)
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case c != nil && c.Status == metav1.ConditionFalse && !n.updating:
		n.started, n.updating = time.Now(), true
	case c != nil && c.Status == metav1.ConditionTrue:
		n.updating = false
	}
}

// startedAt is when the node's last update started (zero: none seen).
func (n *node) startedAt() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.started
}

func newNode(f *Fleet, name string, cfg *rest.Config) *node {
	return &node{f: f, name: name, cfg: cfg, host: newHost(), sd: &systemdtest.Fake{}, reboot: make(chan struct{}, 1)}
}

// run runs the node's daemon until stop: a reboot stops it, and a new one
// starts RebootTime later, as on a real node.
func (n *node) run(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	n.mu.Lock()
	n.cancel, n.done = cancel, done
	n.mu.Unlock()
	defer close(done)
	for ctx.Err() == nil {
		n.mu.Lock()
		n.starts++
		n.mu.Unlock()
		dctx, stopDaemon := context.WithCancel(ctx)
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			n.daemon(dctx)
		}()
		select {
		case <-ctx.Done():
		case <-n.reboot:
		}
		stopDaemon()
		<-finished
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.f.opts.RebootTime):
		}
	}
}

func (n *node) stop() {
	n.mu.Lock()
	cancel, done := n.cancel, n.done
	n.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (n *node) rebooted() {
	select {
	case n.reboot <- struct{}{}:
	default:
	}
}

// daemon builds the daemon as cmd/nodeconfd does and runs it until ctx
// ends.
func (n *node) daemon(ctx context.Context) {
	log := n.f.log.With(zap.String("node", n.name))
	cfg := rest.CopyConfig(n.cfg)
	cfg.UserAgent = "nodeconfd/" + n.name
	cfg.QPS, cfg.Burst = kube.QPS, kube.Burst
	// client-go shares a transport between configs whose TLS settings are
	// the same; a CA of its own (the same certificate, told apart by a
	// comment outside its PEM block) gives this daemon a transport of its
	// own, shared by its API client and its readiness probe: one
	// connection per daemon, as on real nodes.
	cfg.CAData = append(slices.Clip(cfg.CAData), "\n# "+n.name+"\n"...)
	cfg.WrapTransport = n.f.counter.wrap
	kapi, err := kubeapi.NewAPI(cfg)
	if err != nil {
		log.Error("Building the API client", zap.Error(err))
		return
	}
	ready, err := kube.NewReadiness(cfg)
	if err != nil {
		log.Error("Building the readiness probe", zap.Error(err))
		return
	}
	api := &kube.Client{API: kapi, NodeName: n.name, StatusWritten: n.wrote, Readiness: ready}
	drainer := &drain.Drainer{Client: kapi, NodeName: n.name, Timeout: time.Hour, Log: log.Named("drain")}
	var events *kubeapi.Events
	d := &daemon.Daemon{
		API:     api,
		Watcher: kube.NewWatch(api),
		Env: phases.Env{Ports: phases.Ports{
			Configs: &daemon.ConfigCache{Source: api, Size: 2},
			Cluster: cluster{Client: api, Drainer: drainer},
			Host:    n.host,
			Units:   units{Fake: n.sd, rebooted: n.rebooted},
			Policy:  plan.DefaultPolicy(),
			Limits:  plan.Limits{MaxFileSize: plan.DefaultMaxFileSize, MaxConfigSize: plan.DefaultMaxConfigSize},
		}},
		Events: func(uid string) phases.Recorder {
			events = kubeapi.NewEvents(kapi, log.Named("events"), n.name, k8stypes.UID(uid))
			return events
		},
		Log:          log,
		Backoff:      daemon.Backoff{Initial: 5 * time.Second, Max: 5 * time.Minute},
		StartJitter:  n.f.opts.StartJitter,
		UpdateSpread: n.f.opts.UpdateSpread,
	}
	if err := d.Run(ctx); err != nil {
		log.Error("Daemon stopped", zap.Error(err))
	}
	if events != nil {
		events.Shutdown()
	}
}

// cluster joins the API adapter and the drainer, as cmd/nodeconfd does.
type cluster struct {
	*kube.Client
	*drain.Drainer
}

// daemonLogger logs the daemons' warnings and errors to w (nothing when
// nil): a thousand daemons' info lines would cost more than they measure.
func daemonLogger(w io.Writer, level zapcore.Level) *zap.Logger {
	if w == nil {
		return zap.NewNop()
	}
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), level))
}
