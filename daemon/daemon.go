// Package daemon is the node's update loop: it watches its own Node and
// MachineConfigNode, and when the desired config differs from the current
// one it runs the update phases (package phases) against the real adapters,
// retrying failures with capped exponential backoff.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Backoff bounds the retry delay after a failed update.
type Backoff struct {
	Initial, Max time.Duration
}

// Daemon updates one node.
type Daemon struct {
	API *kube.Client
	// Watcher holds the latest Node and MachineConfigNode.
	Watcher Watcher
	// Drift is the config drift monitor; it reports to DriftChanged.
	Drift   DriftMonitor
	Env     phases.Env
	Pool    string
	Events  func(mcnUID string) phases.Recorder
	Log     *zap.Logger
	Backoff Backoff
	Now     func() time.Time
	// ShutdownGrace is how long a step that may wait without end (a
	// blocked drain) goes on after SIGTERM before it gives up; 0 means
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// Cordons, when set, cordons the node again when someone lifts the
	// update's cordon before the update does (keepcordon.go).
	Cordons Recordoner

	// Ready is closed once the daemon has registered its MachineConfigNode.
	Ready chan struct{}
	// Fault, when set, is the test-only fault-point hook (package
	// daemon/faultpoint) handed to each update's runner.
	Fault func(point string)
	// Settled, when set, is called when the node settles into idling: once
	// the daemon started on an up-to-date node, and after every update
	// (also one rolled back to the config the node ran). main returns the
	// memory the work used to the OS there.
	Settled func()
	// Idling, when set, is called at every pass that finds the node
	// idle on its desired config (lifecycle.Writer.Idle: what an update
	// that then did not run said is cleared); it must be cheap when there
	// is nothing to do.
	Idling func()

	// ConfigPattern is the desired config names the node accepts (see
	// plan.ConfigPattern); the zero value accepts every name.
	ConfigPattern plan.ConfigPattern
	// Provenance checks that a desired config is its pool's merge
	// (provenance.go); nil for none.
	Provenance *Provenance
	// ImageModeStatus reports the split of AppliedFilesAndOS
	// (--image-mode-status, imagemode.go).
	ImageModeStatus bool

	// StartJitter spreads the first start of daemons on new nodes (see
	// waitStartDelay); 0 means none.
	StartJitter time.Duration
	// UpdateSpread spreads the start of updates over the cluster's nodes,
	// this much per node (see spreadWait); 0 means none.
	UpdateSpread time.Duration
	// RebootSentinel is the file whose presence asks for a reboot, looked
	// for every RebootCheckInterval while idle (reboot.go); "" for none.
	RebootSentinel      string
	RebootCheckInterval time.Duration
	Sentinels           Sentinels
	// RebootCommand, when set, is run (RunCommand: chrooted in the node)
	// at each check; exit 0 asks for a reboot.
	RebootCommand []string
	RunCommand    func(ctx context.Context, argv []string) error
	// RebootRequired, when set, is told at each pass whether the node asks
	// for a reboot (its RebootRequested annotation): the metric.
	RebootRequired func(asked bool)

	node *corev1.Node
	mcn  *mcfgv1.MachineConfigNode
	// status is the MachineConfigNode's status, the daemon's own copy
	// (the watch cache may lag behind its writes); everything the daemon
	// reports goes through it.
	status   *status.Stager
	events   phases.Recorder
	drift    driftState
	failures int
	// settledOn is the config Settled last ran for, "" once an update ran
	// since.
	settledOn string
	// pausedSince is when the node, idle, was first seen paused (pause.go).
	pausedSince time.Time
	// spread is the update start put off last (spread.go).
	spread spread
	// keptNodes is the node count kept on the node (nodecount.go).
	keptNodes int
	// keptOn is the failed config the node keeps its previous one against
	// (health.go), so that it is reported once.
	keptOn string
	// pool is the node's pool at this pass (kube.Pool); waitingFor what a
	// node with no desired config waits for, as last logged (first.go).
	pool       string
	waitingFor string
}

// Watcher delivers the latest state of the daemon's Node and
// MachineConfigNode, and the cluster's MachineConfigPools.
type Watcher interface {
	// Start begins watching; Changes then fires (coalesced) on every change.
	Start(ctx context.Context) error
	Changes() <-chan struct{}
	Node() (*corev1.Node, bool)
	MCN() (*mcfgv1.MachineConfigNode, bool)
	Pools() []*mcfgv1.MachineConfigPool
}

// DriftMonitor watches the node's files for drift from a config.
type DriftMonitor interface {
	Watch(ctx context.Context, cfg plan.Config) error
	Stop()
}

// driftState is the drift monitor as the daemon drives it; the update's
// Resume and Adopt steps restart it through Watch (phases.Drift).
type driftState struct {
	monitor DriftMonitor
	config  string
	changed chan error
	err     error
}

// Run runs the daemon until ctx is cancelled. A cancel during an update lets
// the current step finish and its progress be saved first.
func (d *Daemon) Run(ctx context.Context) error {
	if d.Now == nil {
		d.Now = time.Now
	}
	d.drift.changed = make(chan error, 1)
	d.drift.monitor = d.Drift
	if err := d.waitStartDelay(ctx); err != nil {
		return nil
	}
	if err := d.Watcher.Start(ctx); err != nil {
		return fmt.Errorf("watching node %s: %w", d.API.NodeName, err)
	}
	var retry <-chan time.Time
	for {
		delay, err := d.reconcile(ctx)
		switch {
		case errors.Is(err, phases.ErrRebooting):
			<-ctx.Done()
			return nil
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, phases.ErrSuperseded), errors.Is(err, phases.ErrPaused):
			continue // the new desired config, or the pause's wait, at once
		case err != nil:
			d.Log.Error("Update failed; will retry", zap.Error(err), zap.Duration("retryIn", delay))
		}
		retry = nil
		if delay > 0 {
			retry = time.After(delay)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.Watcher.Changes():
		case <-retry:
		case derr := <-d.drift.changed:
			d.onDrift(ctx, derr)
		}
	}
}

// reconcile brings the node one pass closer to its desired config. It
// returns the delay before the next try when it failed.
func (d *Daemon) reconcile(ctx context.Context) (time.Duration, error) {
	node, ok := d.Watcher.Node()
	if !ok {
		return 0, nil
	}
	d.node = node
	if d.RebootRequired != nil {
		_, asked := node.Annotations[names.RebootRequested]
		d.RebootRequired(asked)
	}
	d.syncFailedLabel(ctx, node) // failedlabel.go
	d.clearSteer(ctx, node)
	desired := node.Annotations[names.DesiredConfig]
	current := node.Annotations[names.CurrentConfig]
	pool, poolErr := kube.Pool(d.Watcher.Pools(), node, d.Pool)
	if desired == "" {
		return d.awaitFirstConfig(ctx, pool, poolErr, current) // first.go
	}
	d.waitingFor = ""
	if poolErr != nil {
		// The controller hands such a node no config; one set by hand
		// names a pool the node is not in.
		return d.nextDelay(), fmt.Errorf("not applying desiredConfig %s: %w", desired, poolErr)
	}
	d.pool = pool
	if wait := d.spreadWait(ctx, current, desired, d.updateUnderWay); wait > 0 {
		return wait, nil // nothing written until the update starts
	}
	if err := d.ensureMCN(ctx, current, desired); err != nil {
		return d.nextDelay(), err
	}
	rec, err := d.loadProgress(ctx)
	if err != nil {
		return d.nextDelay(), err
	}
	if err := d.cleanLeftovers(ctx, rec, current, desired); err != nil {
		return d.nextDelay(), err
	}
	var pause *phases.Hold // read once: the decision and what the status says agree
	if h, paused := d.pause(); paused {
		pause = &h
	}
	plan := decidePass(passFacts{current: current, desired: desired, rec: rec, recordLost: rec == nil && d.status.RecordLost(),
		retry: node.Annotations[names.RetryFailedConfig], paused: pause != nil, reapply: node.Annotations[names.Reapply] != ""})
	return d.carryOut(ctx, plan, rec, pause)
}

// carryOut does what the pass decided (pass.go); pause is the node's
// pause, nil when it is not paused.
func (d *Daemon) carryOut(ctx context.Context, p passPlan, rec *progress.Record, pause *phases.Hold) (time.Duration, error) {
	log := d.Log.With(zap.String("node", d.node.Name), zap.String("config", p.to))
	switch p.kind {
	case passKept:
		err := d.keep(ctx, rec) // health.go
		return d.delayFor(err), err
	case passRetry:
		var err error
		if rec, err = d.startRetry(rec, p.to); err != nil { // health.go
			return d.nextDelay(), err
		}
	case passIdle:
		// Idle: the node runs its desired config and no update is left
		// half done (an abandoned update, e.g. one whose desired config
		// was rolled back, still has to be undone and its cordon lifted),
		// unless its reboot request was granted (reboot.go).
		finished := rec
		if rec = d.grantedReboot(ctx, p.from); rec == nil {
			d.failures = 0
			d.restageFinished(finished, p.from) // idle.go: written with markUpdated's report
			err := d.idle(ctx, p.from)
			d.checkRebootNeeded(ctx)
			return d.idleDelay(), err
		}
	case passPaused:
		err := d.waitPaused(ctx, p.from, p.to, *pause) // pause.go
		return d.delayFor(err), err
	}
	switch p.why {
	case whyRollbackFirst:
		log.Info("Desired config changed during the health gate's rollback; finishing the rollback first",
			zap.String("desired", d.node.Annotations[names.DesiredConfig]))
	case whyRecordLost:
		log.Info("Updating the node without its lost progress record", zap.String("from", p.from))
		rec = d.lostRecord(p.from, p.to) // records.go
	case whyReapply:
		var err error
		if rec, err = d.startReapply(ctx, p.to); err != nil { // records.go
			return d.nextDelay(), err
		}
	}
	if pause == nil && p.from != "" && (rec == nil || rec.Done(progress.StepResume)) {
		d.pauseEnded(p.to) // pause.go: the update starts; one under way has its own waits
	}
	d.settledOn = "" // idling after any update settles again, even on the same config
	err := d.update(ctx, rec, p.from, p.to)
	return d.delayFor(err), err
}

func (d *Daemon) delayFor(err error) time.Duration {
	switch {
	case errors.Is(err, phases.ErrSuperseded), errors.Is(err, phases.ErrPaused):
		d.failures = 0 // not a failure: the new config (or the wait) goes on at once, with its own backoff
		return 0
	case err == nil || errors.Is(err, phases.ErrRebooting):
		d.failures = 0
		return 0
	}
	return d.nextDelay()
}

// nextDelay is the capped exponential backoff after a failure, with
// jitter: a random time in [delay/2, delay). A whole fleet that fails at
// once (the API server refusing a burst with 429s, or back from an outage)
// would otherwise retry at once too, in step, at every doubling.
func (d *Daemon) nextDelay() time.Duration {
	delay := d.Backoff.Initial << d.failures
	if delay > d.Backoff.Max || delay <= 0 {
		delay = d.Backoff.Max
	} else {
		d.failures++
	}
	if half := delay / 2; half > 0 {
		delay = half + rand.N(delay-half)
	}
	return delay
}
