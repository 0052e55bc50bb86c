// Command nodeconfd is the node configuration daemon: it runs on every node
// (a DaemonSet pod) and steps its node to the rendered MachineConfig the
// node's desiredConfig annotation names, reporting every phase in the node's
// MachineConfigNode status.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/labels"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/cluster/surge"
	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/daemon/drift"
	"github.com/nodeconfd/nodeconfd/daemon/faultpoint"
	"github.com/nodeconfd/nodeconfd/daemon/hostfs"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/logging"
	"github.com/nodeconfd/nodeconfd/daemon/metrics"
	"github.com/nodeconfd/nodeconfd/daemon/notify"
	"github.com/nodeconfd/nodeconfd/daemon/osupdate"
	"github.com/nodeconfd/nodeconfd/daemon/systemd"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// idleGCPercent is the daemon's GOGC unless the environment sets one: it
// idles almost always, so a smaller heap is worth the rare extra collection.
const idleGCPercent = 25

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(idleGCPercent)
	}
	if len(os.Args) == 2 && isHelp(os.Args[1]) {
		writeUsage(os.Stdout)
		return
	}
	for _, c := range commands() {
		if len(os.Args) < 2 || os.Args[1] != c.name {
			continue
		}
		err := c.run(os.Args[2:])
		if errors.Is(err, flag.ErrHelp) { // the command's --help, printed
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "nodeconfd:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) >= 2 {
		fmt.Fprintf(os.Stderr, "nodeconfd: unknown command %q\n\n", os.Args[1])
	}
	writeUsage(os.Stderr)
	os.Exit(2)
}

type options struct {
	nodeName, rootMount, kubeconfig, busAddress, pool string
	logFormat, policyFile                             string
	metrics                                           metricsOptions
	// given are the flags set to other values than their defaults, as
	// the start line logs them.
	given                              map[string]string
	drainTimeout                       time.Duration
	drainTimeoutAction                 string
	volumeDetachTimeout                time.Duration
	drainLast                          labels.Selector
	surgeMax                           int
	evictUnowned, debug, releaseMemory bool
	imageModeStatus, lifecycleConds    bool
	backoffInitial, backoffMax         time.Duration
	pullRetry                          osupdate.Retry
	osTimeout                          time.Duration
	namespace                          string
	configPattern                      plan.ConfigPattern
	startJitter                        time.Duration
	updateSpread                       time.Duration
	limits                             plan.Limits
	waits                              *waitOptions
	onceFrom                           string
	skipReboot                         bool
	health                             healthOptions
	reboot                             *rebootOptions
	notify                             *notifyOptions
	provenance                         *provenanceOptions
	removed                            *[]string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // --help and errors: see startFlagError
	fs.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME)")
	fs.StringVar(&o.rootMount, "root-mount", "/rootfs", "where the node's root filesystem is mounted")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config)")
	fs.StringVar(&o.busAddress, "system-bus-address", "", "the node's D-Bus system bus (default: unix:path=<root-mount>/run/dbus/system_bus_socket)")
	fs.StringVar(&o.pool, "pool", "", "the node's pool (default: its node-role.kubernetes.io/<role> label, else worker)")
	o.metrics.register(fs, "127.0.0.1:8798", "/metrics, /healthz and /readyz (the DaemonSet sets the node's IP for Prometheus)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.policyFile, "node-disruption-policy", "", "a file holding a nodeDisruptionPolicy block (or a MachineConfiguration) "+
		"used instead of the cluster's MachineConfiguration cluster; for start --once-from, which has no cluster")
	fs.StringVar(&o.policyFile, "post-action-policy", "", "old name of --node-disruption-policy")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", time.Hour, "how long a drain may take before --drain-timeout-action applies (0: no limit)")
	fs.StringVar(&o.drainTimeoutAction, "drain-timeout-action", "retry",
		"after --drain-timeout: retry (keep retrying; the status and a Warning Event say what blocks it, once per timeout) "+
			"or fail (uncordon, report the blocking pods in NodeDegraded, write nothing, retry the update later)")
	fs.DurationVar(&o.volumeDetachTimeout, "volume-detach-timeout", 5*time.Minute,
		"after the drain, how long a reboot waits for the drained pods' volumes (their VolumeAttachments) to be detached "+
			"before it goes ahead all the same (0: no wait)")
	fs.BoolVar(&o.evictUnowned, "evict-unowned-pods", false, "also evict pods that no controller will recreate")
	selectorFlag(fs, "drain-last-selector", "a label selector of the pods the drain evicts only once every other pod "+
		"is gone (e.g. app=storage-manager)", &o.drainLast)
	fs.IntVar(&o.surgeMax, "drain-surge-max", 1, "how many workloads the drains of all nodes may surge at once (one more "+
		"replica, asked of nodeconfd controller, where a PodDisruptionBudget refuses an eviction, for a Deployment or "+
		"Parallel StatefulSet annotated "+
		surge.Annotation+"=true, or any owner with a scale subresource in a namespace so annotated; 0: never); "+
		"set the same on every node")
	fs.BoolVar(&o.debug, "debug", false, "log at debug level")
	addStatusFlags(fs, &o)
	fs.BoolVar(&o.releaseMemory, "release-memory-when-idle", true,
		"when the node settles on a config, return the heap the work used to the OS")
	fs.DurationVar(&o.backoffInitial, "retry-initial", 5*time.Second, "first retry delay after a failed update (each delay is drawn in [d/2, d))")
	fs.DurationVar(&o.backoffMax, "retry-max", 5*time.Minute, "longest retry delay after failed updates")
	fs.IntVar(&o.pullRetry.Attempts, "os-pull-attempts", osupdate.DefaultRetry().Attempts, "tries of an OS image pull (rpm-ostree rebase, bootc switch) before the update fails")
	fs.DurationVar(&o.pullRetry.Initial, "os-pull-retry-initial", osupdate.DefaultRetry().Initial, "first wait before retrying a failed OS image pull")
	fs.DurationVar(&o.pullRetry.Max, "os-pull-retry-max", osupdate.DefaultRetry().Max, "longest wait between OS image pull retries")
	fs.DurationVar(&o.osTimeout, "os-command-timeout", osupdate.DefaultTimeout, "how long one rpm-ostree or bootc command may run")
	fs.StringVar(&o.namespace, "namespace", envOr("POD_NAMESPACE", "nodeconfd"), "the daemon's namespace, where --maintenance-windows-configmap is read (default $POD_NAMESPACE, else nodeconfd)")
	fs.DurationVar(&o.startJitter, "start-jitter", daemon.DefaultStartJitter,
		"on a node the daemon never ran on, wait a random time up to this (or the longer --update-spread window) before registering, so that a new cluster's nodes do not all register at once (0: no wait)")
	fs.DurationVar(&o.updateSpread, "update-spread", daemon.DefaultUpdateSpread,
		"spread the start of a new update over (nodes in the cluster - 1) × this, at most "+daemon.MaxUpdateSpread.String()+
			", so that nodes given a config by hand at once do not all prepare at once (e.g. 100ms; 0, the default: start at once, "+
			"as nodeconfd controller hands a pool's config to maxUnavailable nodes at a time)")
	o.health.register(fs)
	pattern := fs.String("allowed-config-pattern", plan.DefaultConfigPattern,
		"regular expression a desired config's name must match, {pool} standing for the node's pool; "+
			"other names (a fragment such as 99-worker-ssh, another pool's rendered config) are refused (empty: any name)")
	limitFlags(fs, &o.limits, "")
	o.waits = addWaitFlags(fs)
	o.reboot = addRebootFlags(fs)
	o.notify = addNotifyFlags(fs)
	o.provenance = addProvenanceFlags(fs)
	o.removed = addRemovedFlags(fs)
	fs.StringVar(&o.onceFrom, "once-from", "", "apply the rendered MachineConfig in this file (YAML or JSON) with no API server, record it as the node's config, and exit")
	fs.BoolVar(&o.skipReboot, "skip-reboot", false, "with --once-from: do not reboot; what needs a reboot takes effect at the next boot")
	if err := fs.Parse(args); err != nil {
		return o, startFlagError(fs, err)
	}
	o.given = givenFlags(fs)
	return o, checkOptions(&o, *pattern)
}

// checkOptions checks the start flags together, before anything starts;
// each error names its flag.
func checkOptions(o *options, pattern string) error {
	if err := checkRemoved(*o.removed); err != nil {
		return err
	}
	if err := o.waits.check(); err != nil {
		return err
	}
	if err := o.reboot.check(); err != nil {
		return err
	}
	if err := o.notify.check(); err != nil {
		return err
	}
	if err := onceFromFlags(o); err != nil {
		return err
	}
	if err := o.limits.Check(); err != nil {
		return fmt.Errorf("--max-file-size, --max-config-size, --max-files, --max-units, --max-path-depth: %w", err)
	}
	var err error
	if o.configPattern, err = plan.ParseConfigPattern(pattern); err != nil {
		return fmt.Errorf("--allowed-config-pattern: %w", err)
	}
	if o.nodeName == "" {
		return fmt.Errorf("--node-name (or $NODE_NAME) is required")
	}
	if o.drainTimeoutAction != "retry" && o.drainTimeoutAction != "fail" {
		return fmt.Errorf("--drain-timeout-action %q: want retry or fail", o.drainTimeoutAction)
	}
	if err := checkSurgeMax(o.surgeMax); err != nil {
		return err
	}
	if o.volumeDetachTimeout < 0 {
		return fmt.Errorf("--volume-detach-timeout %s: must not be negative", o.volumeDetachTimeout)
	}
	if o.drainTimeout < 0 {
		return fmt.Errorf("--drain-timeout %s: must not be negative", o.drainTimeout)
	}
	if err := o.health.check(); err != nil {
		return err
	}
	if err := o.metrics.check(); err != nil {
		return err
	}
	if o.busAddress == "" {
		o.busAddress = "unix:path=" + filepath.Join(o.rootMount, "run/dbus/system_bus_socket")
	}
	return nil
}

func start(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	log, err := logging.New(o.logFormat, o.debug)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	logVersion(log, "start", o.given)
	if limit := setMemoryLimit(); limit > 0 {
		log.Info("Set the Go memory limit from the container's", zap.String("node", o.nodeName), zap.Int64("bytes", limit))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	policy, err := loadPolicy(o.policyFile)
	if err != nil {
		return err
	}
	if o.onceFrom != "" {
		return startOnce(ctx, o, policy, log)
	}
	return runDaemon(ctx, o, policy, log)
}

// runDaemon builds every real dependency of the daemon and runs it until
// ctx ends.
func runDaemon(ctx context.Context, o options, policy plan.Policy, log *zap.Logger) error {
	m := metrics.New()
	kapi, ready, err := apiClient(ctx, o, m, log)
	if err != nil {
		return err
	}
	fault, err := faultpoint.FromEnv() // test-only; nil in production
	if err != nil {
		return err
	}
	host, units, closeNode, err := openNode(ctx, o, fault)
	if err != nil {
		return err
	}
	defer closeNode()
	osu, err := detectOS(ctx, o, m, log)
	if err != nil {
		return err
	}
	api := &kube.Client{API: kapi, NodeName: o.nodeName, StatusWritten: m.StatusWritten, Readiness: ready}
	objects := kube.NewWatch(api)
	holds, source, err := startSources(ctx, o, api, objects, log)
	if err != nil {
		return err
	}
	var events *kubeapi.Events
	var eventsReady atomic.Pointer[kubeapi.Events] // set once the MachineConfigNode's UID is known
	drainr := drainer(o, kapi, log, fault)
	drainr.Surge.Count, drainr.Surge.Event = m.DrainSurge, workloadEvents(&eventsReady)
	if o.waits.forecastWait {
		holds.Drain = drainr
	}
	restoreSurges(ctx, drainr, log)
	notifier := o.notify.notifier(ctx, o.nodeName, objects, m, log)
	lc := o.lifecycleWriter(api, log)
	env := phases.Env{Observer: lc.observer(notify.Observe(m, notifier)), Ports: phases.Ports{
		Configs:      &daemon.ConfigCache{Source: api, Size: 2},
		Cluster:      lc.cluster(m.Cluster(cluster{Client: api, Drainer: drainr})),
		Host:         daemon.Host{FS: host, Units: units},
		Units:        notify.Units(units, notifier),
		OS:           osu,
		Policy:       policy,
		PolicySource: source,
		Limits:       o.limits,
		Waits:        holds,
		Health: o.health.gate(&daemon.HealthProbe{Objects: objects, API: api, Units: units, Root: o.rootMount,
			CommandTimeout: o.health.commandTimeout}, lc.healthResult(notify.HealthResult(m.HealthGateResult, notifier))),
		RebootRequests: daemon.RebootRequests{API: api, Sentinels: host, Path: o.reboot.sentinel},
		Volumes:        &phases.VolumeWait{Attached: api.AttachedVolumes, Timeout: o.volumeDetachTimeout, Every: 5 * time.Second},
	}}
	d := &daemon.Daemon{
		API:           api,
		Watcher:       objects,
		Env:           env,
		Pool:          o.pool,
		ConfigPattern: o.configPattern,
		Provenance:    o.provenance.build(objects, api, o.limits),
		Events: func(uid string) phases.Recorder {
			events = kubeapi.NewEvents(kapi, log.Named("events"), o.nodeName, k8stypes.UID(uid))
			eventsReady.Store(events)
			return events
		},
		Log: log, Fault: fault, Cordons: drainr,
		Backoff:         daemon.Backoff{Initial: o.backoffInitial, Max: o.backoffMax},
		StartJitter:     o.startJitter,
		UpdateSpread:    o.updateSpread,
		ImageModeStatus: o.imageModeStatus,
		RebootSentinel:  o.reboot.sentinel, RebootCheckInterval: o.reboot.every, Sentinels: host,
		RebootCommand: strings.Fields(o.reboot.command), RunCommand: runInRoot(o.rootMount),
		RebootRequired: m.RebootRequired, Settled: settled(o, log), Idling: lc.idling(),
	}
	d.Drift = &drift.Monitor{Host: daemon.Host{FS: host}, Units: units, Abs: host.Abs, SSHKeysPath: host.SSHKeysPath,
		Log: log, Changed: d.DriftChanged}
	defer d.Drift.Stop()
	log.Info("Starting", zap.String("node", o.nodeName), zap.String("rootMount", o.rootMount),
		zap.String("systemBus", o.busAddress))
	err = d.Run(ctx)
	if events != nil {
		events.Shutdown()
	}
	log.Info("Stopped", zap.String("node", o.nodeName))
	return err
}

// openNode opens the node's root mount and its systemd; closeNode closes
// both.
func openNode(ctx context.Context, o options, fault func(string)) (host *hostfs.FS, units *systemd.DBus, closeNode func(), err error) {
	if host, err = hostfs.Open(o.rootMount); err != nil {
		return nil, nil, nil, fmt.Errorf("opening the root mount: %w", err)
	}
	host.Fault = fault
	if units, err = systemd.Dial(ctx, o.busAddress); err != nil {
		host.Close()
		return nil, nil, nil, fmt.Errorf("connecting to the node's systemd at %s: %w", o.busAddress, err)
	}
	return host, units, func() { units.Close(); host.Close() }, nil
}

// detectOS finds the node's OS updater (rpm-ostree, bootc, none).
func detectOS(ctx context.Context, o options, m *metrics.Metrics, log *zap.Logger) (phases.OSUpdater, error) {
	retry := o.pullRetry
	retry.Log = log.Named("osupdate").With(zap.String("node", o.nodeName))
	retry.Retried = m.OSPullRetried
	osu, err := osupdate.Detect(ctx, o.rootMount, osupdate.Chroot{Root: o.rootMount, Timeout: o.osTimeout}, retry)
	if err != nil {
		return nil, fmt.Errorf("detecting the node's OS updater: %w", err)
	}
	m.OSUpdaterDetected(osupdate.Name(osu))
	log.Info("Detected the OS updater", zap.String("node", o.nodeName), zap.String("updater", osupdate.Name(osu)))
	return osu, nil
}

// settled is the daemon's Settled hook: releaseMemory, unless
// --release-memory-when-idle=false.
func settled(o options, log *zap.Logger) func() {
	if !o.releaseMemory {
		return nil
	}
	return func() { releaseMemory(log, o.nodeName) }
}

// releaseMemory returns the heap the daemon's finished work used to the OS
// as it settles into idling: about 1 MiB off the container's working set
// (BenchmarkIdleWorkingSet). It no longer has the kernel reclaim the
// executable's pages (MADV_PAGEOUT): they refaulted at once onto the
// active list, and the working set the kubelet counts grew by 16 MiB.
func releaseMemory(log *zap.Logger, node string) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	log.Info("Settled; released memory", zap.String("node", node),
		zap.Uint64("heapReleasedKiBBefore", before.HeapReleased>>10), zap.Uint64("heapReleasedKiBAfter", after.HeapReleased>>10))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// cluster joins the API adapter and the drainer into what the phases see.
type cluster struct {
	*kube.Client
	*drain.Drainer
}
