// Package daemon is the node's update loop: it watches its own Node and
// MachineConfigNode, and when the desired config differs from the current
// one it runs the update phases (package phases) against the real adapters,
// retrying failures with capped exponential backoff.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
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
	API     *kube.Client
	Objects Watcher
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

	// ConfigPattern is the desired config names the node accepts (see
	// plan.ConfigPattern); the zero value accepts every name.
	ConfigPattern plan.ConfigPattern

	node     *corev1.Node
	mcn      *mcfgv1.MachineConfigNode
	events   phases.Recorder
	drift    driftState
	failures int
	// settledOn is the config Settled last ran for, "" once an update ran
	// since.
	settledOn string
	// heldOn is the failed config the node holds its previous one against
	// (health.go), so that the hold is logged once.
	heldOn string
}

// DefaultShutdownGrace leaves a drain time to finish after SIGTERM, well
// inside a pod's default 30 s termination grace period.
const DefaultShutdownGrace = 10 * time.Second

// Watcher delivers the latest state of the daemon's Node and
// MachineConfigNode.
type Watcher interface {
	// Start begins watching; Changes then fires (coalesced) on every change.
	Start(ctx context.Context) error
	Changes() <-chan struct{}
	Node() (*corev1.Node, bool)
	MCN() (*mcfgv1.MachineConfigNode, bool)
}

// DriftMonitor watches the node's files for drift from a config.
type DriftMonitor interface {
	Watch(ctx context.Context, cfg plan.Config) error
	Stop()
}

type driftState struct {
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
	if err := d.Objects.Start(ctx); err != nil {
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
		case errors.Is(err, phases.ErrSuperseded):
			continue // the new desired config, at once
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
		case <-d.Objects.Changes():
		case <-retry:
		case derr := <-d.drift.changed:
			d.onDrift(ctx, derr)
		}
	}
}

// reconcile brings the node one pass closer to its desired config. It
// returns the delay before the next try when it failed.
func (d *Daemon) reconcile(ctx context.Context) (time.Duration, error) {
	node, ok := d.Objects.Node()
	if !ok {
		return 0, nil
	}
	d.node = node
	desired := node.Annotations[kube.DesiredConfig]
	current := node.Annotations[kube.CurrentConfig]
	log := d.Log.With(zap.String("node", node.Name), zap.String("config", desired))
	if desired == "" {
		log.Info("Node has no desiredConfig annotation yet; waiting")
		return 0, nil
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
	if rec == nil && d.recordLost() {
		return d.afterLostRecord(ctx, current, desired)
	}
	var held bool
	if rec, held, err = d.healthHold(ctx, rec, current, desired); held || err != nil {
		return d.delayFor(err), err
	}
	// Idle when the node runs its desired config and no update is left
	// half done (an abandoned update, e.g. one whose desired config was
	// rolled back, still has to be undone and its cordon lifted).
	if desired == current && (rec == nil || rec.Done("resume")) {
		d.failures = 0
		return 0, d.idle(ctx, current)
	}
	if current == "" && rec == nil {
		adopted, err := d.adopt(ctx, desired)
		if err != nil || adopted {
			return d.delayFor(err), err
		}
	}
	d.settledOn = "" // idling after any update settles again, even on the same config
	err = d.update(ctx, rec, current, desired)
	return d.delayFor(err), err
}

func (d *Daemon) delayFor(err error) time.Duration {
	switch {
	case errors.Is(err, phases.ErrSuperseded):
		d.failures = 0 // not a failure: the new config goes on at once, with its own backoff
		return 0
	case err == nil || errors.Is(err, phases.ErrRebooting):
		d.failures = 0
		return 0
	}
	return d.nextDelay()
}

// nextDelay is the capped exponential backoff after a failure.
func (d *Daemon) nextDelay() time.Duration {
	delay := d.Backoff.Initial << d.failures
	if delay > d.Backoff.Max || delay <= 0 {
		delay = d.Backoff.Max
	} else {
		d.failures++
	}
	return delay
}

// ensureMCN creates the MachineConfigNode when missing (with every condition
// at False/NotYetOccurred) and keeps its spec in step with the node. The
// daemon's own copy of the status is authoritative once loaded: the watch
// cache may lag behind the daemon's writes.
func (d *Daemon) ensureMCN(ctx context.Context, current, desired string) error {
	pool := kube.Pool(d.node.Labels, d.Pool)
	mcn, ok := d.Objects.MCN()
	created := false
	if !ok {
		var err error
		if mcn, created, err = d.API.EnsureMCN(ctx, status.NewMCN(d.node.Name, pool, desired)); err != nil {
			return err
		}
		d.mcn = nil
	} else if mcn.Spec.ConfigVersion.Desired != desired || mcn.Spec.Pool.Name != pool {
		updated, err := d.API.SyncSpec(ctx, mcn, pool, desired)
		if err != nil {
			return err
		}
		mcn = updated
	}
	d.API.Generation = mcn.Generation
	if d.mcn != nil {
		d.mcn.Spec, d.mcn.Generation = mcn.Spec, mcn.Generation
		return nil
	}
	d.mcn = mcn
	if d.Events != nil && d.events == nil {
		d.events = d.Events(string(mcn.UID))
	}
	if created || len(mcn.Status.Conditions) == 0 {
		now := metav1.NewTime(d.Now().Truncate(time.Second))
		d.mcn.Status.Conditions = status.Initial(now)
		if current != "" && current == desired {
			// A node registered at its config: say so in the same write.
			status.Set(&d.mcn.Status.Conditions, updatedCondition(current, now))
			d.setVersions(current, current)
		}
		cur, des := d.statusVersions()
		if err := d.API.WriteStatus(ctx, d.mcn.Status.Conditions, cur, des); err != nil {
			return fmt.Errorf("writing the initial status of MachineConfigNode %s: %w", d.node.Name, err)
		}
		d.Log.Info("Registered MachineConfigNode", zap.String("node", d.node.Name), zap.String("pool", pool),
			zap.Bool("created", created))
	}
	if d.Ready != nil {
		select {
		case <-d.Ready:
		default:
			close(d.Ready)
		}
	}
	return nil
}

func (d *Daemon) loadProgress(ctx context.Context) (*progress.Record, error) {
	data, err := d.Env.Host.ReadState(progress.FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return d.decodeProgress(ctx, data, err)
}

func (d *Daemon) statusVersions() (string, string) {
	if cv := d.mcn.Status.ConfigVersion; cv != nil {
		return cv.Current, cv.Desired
	}
	return "", ""
}

func (d *Daemon) runner(rec *progress.Record) *phases.Runner {
	cur, des := d.statusVersions()
	env := d.Env
	env.Drift = d
	env.ConfigRule = d.ConfigPattern.For(kube.Pool(d.node.Labels, d.Pool))
	return &phases.Runner{
		Env: env, Status: d.API, Events: d.events, Log: d.Log.With(zap.String("node", d.node.Name)),
		Now: d.Now, Phases: phases.All(), Record: rec,
		Conditions:     append([]metav1.Condition(nil), d.mcn.Status.Conditions...),
		CurrentVersion: cur, DesiredVersion: des, Fault: d.Fault,
	}
}

// update runs (or resumes) the update from current to desired.
func (d *Daemon) update(ctx context.Context, rec *progress.Record, current, desired string) error {
	d.stopDrift()
	if rec != nil && rec.Desired != desired && !rec.Done("resume") && !rec.Done("write") {
		// A replaced update that wrote nothing gives back its cordon and
		// slot first (it did not if a restart or a failure came between
		// the new desired config and its own stop).
		old := d.runner(rec)
		old.Start(d.node.Name)
		// What it wrote is rolled back first, so that nothing of it stays
		// and the give-back's status is true.
		if _, err := old.RollBackAbandoned(context.WithoutCancel(ctx)); err != nil {
			return d.fail(context.WithoutCancel(ctx), old, err)
		}
		outcome, err := old.GiveBack(context.WithoutCancel(ctx))
		if err != nil {
			return d.fail(context.WithoutCancel(ctx), old, err)
		}
		d.Log.Info("Replaced update gave back its cordon and disruption slot", zap.String("node", d.node.Name),
			zap.String("replaced", rec.Desired), zap.String("config", desired), zap.String("result", outcome))
		// Cordoned says so before the new update's status starts.
		if err := old.Flush(context.WithoutCancel(ctx)); err != nil {
			d.Log.Warn("Cannot write the status of the replaced update", zap.String("node", d.node.Name), zap.Error(err))
		}
		d.mcn.Status.Conditions = old.Conditions
	}
	rec = d.recordFor(rec, current, desired)
	r := d.runner(rec)
	r.Start(d.node.Name)
	log := d.Log.With(zap.String("node", d.node.Name), zap.String("config", desired))
	// The steps themselves are not cancelled by a SIGTERM: the runner stops
	// between steps, once the current one is done and saved.
	stepCtx := context.WithoutCancel(ctx)
	r.Stopping = func() bool { return ctx.Err() != nil }
	r.Shutdown = ctx
	// A step that may wait without end is interrupted a grace period
	// after the SIGTERM.
	interrupt, interrupted := context.WithCancel(stepCtx)
	defer interrupted()
	grace := d.ShutdownGrace
	if grace <= 0 {
		grace = DefaultShutdownGrace
	}
	defer context.AfterFunc(ctx, func() { time.AfterFunc(grace, interrupted) })()
	r.Interrupt = interrupt.Done()
	watching, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	r.DesiredChanged = d.desiredChanged(watching, desired)
	if !rec.Done(stepDetect) {
		log.Info("Update detected", zap.String("from", current))
		r.Detected()
		rec.Finish(progress.Step{Name: stepDetect, Message: "detected"})
		if err := r.SaveProgress(); err != nil {
			return err
		}
		if err := d.API.SetNodeState(stepCtx, "", phases.StateWorking, ""); err != nil {
			return err
		}
	} else {
		log.Info("Resuming update", zap.Strings("done", doneSteps(rec)))
		r.Replay()
		if err := r.Reload(stepCtx); err != nil {
			return d.fail(stepCtx, r, err)
		}
	}
	err := r.Run(stepCtx)
	d.mcn.Status.Conditions = r.Conditions
	d.setVersions(r.CurrentVersion, r.DesiredVersion)
	switch {
	case err == nil, errors.Is(err, phases.ErrRebooting), errors.Is(err, phases.ErrStopped):
		return err
	case errors.Is(err, phases.ErrSuperseded):
		log.Info("Update stopped: the node's desired config changed; taking up the new one")
		return err
	case errors.Is(err, phases.ErrHeld): // the status says so; wait for a new desired config or a retry
		return nil
	}
	return d.fail(stepCtx, r, err)
}

// desiredChangedEvery is how often a running update looks at the node's
// desired config (in the watch cache: no request).
const desiredChangedEvery = time.Second

// desiredChanged returns a channel closed once the node's desired config is
// no longer desired, looked at until ctx ends.
func (d *Daemon) desiredChanged(ctx context.Context, desired string) <-chan struct{} {
	changed := make(chan struct{})
	go func() {
		t := time.NewTicker(desiredChangedEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if n, ok := d.Objects.Node(); ok {
				if now := n.Annotations[kube.DesiredConfig]; now != "" && now != desired {
					close(changed)
					return
				}
			}
		}
	}()
	return changed
}

// stepDetect is the progress step of an update's detection (status reset).
const stepDetect = "detect"

func doneSteps(rec *progress.Record) []string {
	var names []string
	for _, s := range rec.Steps {
		names = append(names, s.Name)
	}
	return names
}

// recordFor returns the progress record of the update from current to
// desired: the one on disk when it is that update's, else a new one. When
// the desired config changed after the previous update's files were
// written, the new update starts from those files.
func (d *Daemon) recordFor(rec *progress.Record, current, desired string) *progress.Record {
	if rec != nil && rec.Desired == desired && !rec.Done("resume") {
		return rec
	}
	if rec == nil || rec.Done("resume") {
		return progress.New(current, desired)
	}
	from := rec.Current
	if rec.Done("write") && !rec.RolledBack() {
		from = rec.Desired
	}
	return progress.Replacing(rec, from, desired)
}

func (d *Daemon) setVersions(cur, des string) {
	if des == "" {
		return
	}
	d.mcn.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: cur, Desired: des}
}

// fail reports a failed update: status, node annotations and an Event.
func (d *Daemon) fail(ctx context.Context, r *phases.Runner, err error) error {
	state := phases.StateDegraded
	var ue *plan.UnreconcilableError
	var us *phases.UnsupportedError
	if errors.As(err, &ue) || errors.As(err, &us) {
		state = phases.StateUnreconcilable
	}
	// The annotation first: once the status shows the failure, the
	// compatible view already does too.
	if aerr := d.API.SetNodeState(ctx, "", state, truncate(err.Error(), 1024)); aerr != nil {
		d.Log.Error("Cannot write the node's state annotation", zap.Error(aerr))
	}
	if ferr := r.Fail(ctx, err); ferr != nil {
		d.Log.Error("Cannot write the failure to the MachineConfigNode", zap.Error(ferr))
	}
	d.mcn.Status.Conditions = r.Conditions
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
