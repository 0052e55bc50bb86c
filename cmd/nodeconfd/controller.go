package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/cluster/surge"
	"github.com/nodeconfd/nodeconfd/controller"
	"github.com/nodeconfd/nodeconfd/controller/leader"
	"github.com/nodeconfd/nodeconfd/controller/migrate"
	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/logging"
	"github.com/nodeconfd/nodeconfd/daemon/metrics"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/render"
)

// controllerOptions are `nodeconfd controller`'s flags.
type controllerOptions struct {
	kubeconfig, namespace, identity, leaseName string
	logFormat                                  string
	debug, leaderElect                         bool
	lease, renew, retry                        time.Duration
	workers                                    int
	osImage, extensionsImage                   string
	limits                                     plan.Limits
	prometheusURL                              string
	drainForecast                              bool
	surgeMax                                   int
	retention                                  int
	metrics                                    metricsOptions
	given                                      map[string]string
}

func parseControllerFlags(args []string) (controllerOptions, error) {
	var o controllerOptions
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	host, _ := os.Hostname()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config)")
	fs.StringVar(&o.namespace, "namespace", envOr("POD_NAMESPACE", "nodeconfd"), "namespace of the leader election's Lease (default $POD_NAMESPACE, else nodeconfd)")
	fs.StringVar(&o.identity, "identity", envOr("POD_NAME", host), "this replica's name in the leader election (default $POD_NAME, else the host name)")
	fs.StringVar(&o.leaseName, "leader-election-lease", "nodeconfd-controller", "name of the leader election's Lease")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "run only while elected leader among the replicas (false: a single replica, for tests)")
	fs.DurationVar(&o.lease, "leader-election-lease-duration", leader.DefaultLeaseDuration, "how long a leader's Lease holds without renewal")
	fs.DurationVar(&o.renew, "leader-election-renew-deadline", leader.DefaultRenewDeadline, "how long a leader tries to renew before it stops leading")
	fs.DurationVar(&o.retry, "leader-election-retry-period", leader.DefaultRetryPeriod, "how often candidates try and the leader renews")
	fs.IntVar(&o.workers, "workers", 2, "pools reconciled at once")
	fs.StringVar(&o.osImage, "base-os-image-url", "", "the OS image a pool runs when no MachineConfig sets one (default: none; the nodes keep their OS)")
	fs.StringVar(&o.extensionsImage, "base-os-extensions-image", "", "the extensions image a pool runs when no MachineConfig sets one")
	limitFlags(fs, &o.limits, "the daemons'")
	fs.StringVar(&o.prometheusURL, "prometheus-url", "", "Prometheus to ask the pools' SLO queries (annotation "+
		controller.SLOAnnotation+") while a node soaks (none: a pool with queries waits, saying so)")
	fs.BoolVar(&o.drainForecast, "drain-forecast", true, "hand a pool's config to nodes whose drains could finish "+
		"before nodes a PodDisruptionBudget at zero would hold (a forecast per candidate: a few LISTs)")
	fs.IntVar(&o.surgeMax, "drain-surge-max", 1, "as the daemons' (0: they never surge, so a forecast counts no surge)")
	fs.IntVar(&o.retention, "rendered-config-retention", defaultRetention, "how many of each pool's unused rendered "+
		"configs to keep, the newest; older ones the controller created are deleted (0: keep every rendered config, "+
		"pruning off; docs/controller.md, \"Pruning rendered configs\")")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&o.debug, "debug", false, "log at debug level")
	o.metrics.register(fs, ":8443", "/metrics, /healthz and /readyz (the Deployment's probes)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.given = givenFlags(fs)
	if err := o.metrics.check(); err != nil {
		return o, err
	}
	if o.retention < 0 {
		return o, fmt.Errorf("--rendered-config-retention %d: must not be negative (0 keeps every rendered config)", o.retention)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("controller: unexpected argument %q", fs.Arg(0))
	}
	if o.workers < 1 {
		return o, fmt.Errorf("--workers=%d: want at least 1", o.workers)
	}
	if err := checkSurgeMax(o.surgeMax); err != nil {
		return o, err
	}
	if o.identity == "" {
		return o, errors.New("--identity: empty (set $POD_NAME)")
	}
	if o.prometheusURL != "" {
		if u, err := url.Parse(o.prometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || u.RawQuery != "" {
			return o, fmt.Errorf("--prometheus-url %q: want an http or https URL with a host, and no user info or query",
				o.prometheusURL)
		}
	}
	return o, o.limits.Check()
}

// defaultRetention is --rendered-config-retention's default: the unused
// rendered configs kept per pool, beyond those in use, so that a recent
// config can be handed back by hand without rendering it again.
const defaultRetention = 5

// runController is `nodeconfd controller`: the pools' render and rollout,
// while this replica is the leader.
func runController(args []string) error {
	o, err := parseControllerFlags(args)
	if err != nil {
		return err
	}
	log, err := logging.New(o.logFormat, o.debug)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	logVersion(log, "controller", o.given)
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "nodeconfd-controller/" + o.identity
	cfg.QPS, cfg.Burst = kube.QPS, kube.Burst
	api, err := kubeapi.NewAPI(cfg)
	if err != nil {
		return fmt.Errorf("building the API client: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	events := kubeapi.NewEvents(api, log, "", "")
	defer events.Shutdown()
	reg := controllerRegistry()
	c := &controller.Controller{API: api, Log: log, Events: events, OwnNode: os.Getenv("NODE_NAME"), Retention: o.retention,
		Render: render.Options{BaseOSImageURL: o.osImage, BaseOSExtensionsImage: o.extensionsImage,
			ControllerVersion: version, Limits: o.limits}, Metrics: controller.NewMetrics(reg),
		Surges: &surge.Granter{Client: api, Namespace: o.namespace, Log: log.Named("surge")}}
	var leading atomic.Bool
	leading.Store(!o.leaderElect)
	serveOpts, err := o.metrics.options(cfg, o.identity, controllerReady(c, &leading), log)
	if err != nil {
		return err
	}
	serveRegistry(ctx, reg, serveOpts, log)
	if o.drainForecast {
		c.DrainBlocked = func(ctx context.Context, node string) (string, error) {
			d := &drain.Drainer{Client: api, NodeName: node, Surge: drain.SurgeOptions{Max: o.surgeMax}}
			return d.WouldBlock(ctx)
		}
	}
	if o.prometheusURL != "" {
		if c.SLOs, err = controller.NewPrometheus(o.prometheusURL); err != nil {
			return err
		}
	}
	log.Info("Starting the controller", zap.String("version", version), zap.String("identity", o.identity),
		zap.Bool("leaderElect", o.leaderElect), zap.Int("renderedConfigRetention", o.retention))
	if !o.leaderElect {
		c.Metrics.Leading(true)
		removeLeaseBudget(ctx, api, o.namespace, log)
		return c.Run(ctx, o.workers)
	}
	var runErr error
	err = leader.Run(ctx, leader.Config{Leases: api.Leases(o.namespace), Namespace: o.namespace, Name: o.leaseName,
		Identity: o.identity, LeaseDuration: o.lease, RenewDeadline: o.renew, RetryPeriod: o.retry, Log: log},
		func(lctx context.Context) {
			leading.Store(true)
			c.Metrics.Leading(true)
			defer func() { leading.Store(false); c.Metrics.Leading(false) }()
			removeLeaseBudget(lctx, api, o.namespace, log)
			runErr = c.Run(lctx, o.workers)
		})
	if errors.Is(err, context.Canceled) {
		return runErr
	}
	return errors.Join(err, runErr)
}

// controllerRegistry holds the controller's metrics: the Go runtime's,
// the process's, its build and (controller.NewMetrics) the pools'.
func controllerRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.BuildInfo("nodeconfd", version, buildRevision()))
	return reg
}

// controllerReady is /readyz: a replica standing by is ready (it takes
// over when elected); the leader once its caches have synced and it
// reconciles.
func controllerReady(c *controller.Controller, leading *atomic.Bool) func() error {
	return func() error {
		if leading.Load() && !c.Synced() {
			return errors.New("leading; the caches have not synced yet")
		}
		return nil
	}
}

// removeLeaseBudget deletes the Leases of the daemons' old disruption
// budget, once per leadership (docs/operations.md, "Migrating from the
// Lease budget"). A failure is logged and left for the next leader or
// start: the Leases hold nothing up any more, they are only left over.
func removeLeaseBudget(ctx context.Context, api kubeapi.API, namespace string, log *zap.Logger) {
	deleted, err := migrate.DeleteLeaseBudget(ctx, api.Leases(namespace), namespace, log)
	if err != nil {
		log.Warn("Could not remove the old disruption budget's Leases; the next start tries again", zap.Error(err))
		return
	}
	if len(deleted) > 0 {
		log.Info("Removed the old disruption budget's Leases", zap.Int("leases", len(deleted)))
	}
}
