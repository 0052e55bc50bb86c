package phases

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// ErrRebooting is returned once the node has been asked to reboot: the
// update goes on after the boot, in a new daemon process.
var ErrRebooting = errors.New("node is rebooting")

// Ports are what the steps act on (Data.Ports); the daemon builds them
// from real adapters.
type Ports struct {
	Configs Configs
	Cluster Cluster
	Host    Host
	Units   Units
	OS      OSUpdater
	// Policy is the node disruption policy; PolicySource, when set, gives
	// the one in force instead (a cluster's, watched), or why none can be.
	Policy       plan.Policy
	PolicySource func() (plan.Policy, error)
	// Drift restarts the config drift monitor; nil for none.
	Drift Drift
	// ConfigRule is the desired config names the node accepts; the zero
	// value accepts every name.
	ConfigRule plan.ConfigRule
	// Provenance checks that a desired config is its pool's merge
	// (provenance.go); nil for none.
	Provenance Provenance
	// Limits caps the decoded size of the configs parsed; the zero value
	// means the defaults.
	Limits plan.Limits
	// Waits is what may hold an update (pause, windows, blocking pods);
	// nil for none.
	Waits Waits
	// Health is the post-update health gate (health.go); nil for none.
	Health *HealthGate
	// RebootRequests clears the reboot requests a reboot answered
	// (rebootrequest.go); nil for none.
	RebootRequests RebootRequests
	// Volumes holds a reboot until the drained pods' volumes are detached
	// (volumes.go); nil for no wait.
	Volumes *VolumeWait
}

// PolicyInForce is the node disruption policy in force (PolicySource's
// when set, else Policy), or why there is none: prepare then refuses the
// update, naming the policy's field.
func (p *Ports) PolicyInForce() (plan.Policy, error) {
	if p.PolicySource != nil {
		return p.PolicySource()
	}
	return p.Policy, nil
}

// Env is what the runner is given: the steps' ports and its own Observer.
type Env struct {
	Ports
	// Observer is told what the metrics count (see Observer); nil for none.
	// The steps tell it through Data.Waiting, never directly.
	Observer Observer
}

// Runner runs the steps of one update (the list in update.go) on the
// engine's runner, which owns status staging, logging, progress saving,
// error wrapping and Events; this type binds it to the node: the record,
// the ports, the status writes and how a run ends.
type Runner struct {
	Env Env
	// Status is the node's MachineConfigNode status; the runner stages
	// into it and flushes it.
	Status *status.Stager
	Events Recorder
	Log    *zap.Logger
	Now    func() time.Time
	Phases []Item
	Record *progress.Record
	// Node is the node's name; NodeCurrent its currentConfig annotation
	// (the record's Current differs after a lost record).
	Node, NodeCurrent string
	// SingleNode says the cluster has this node only (Update.SingleNode).
	SingleNode bool
	// Runtime is the node's container runtime (Update.Runtime).
	Runtime plan.Runtime
	// Stop is where the update's stop comes from (a shutdown, a new
	// desired config; a pause comes from Env.Waits); the zero value never
	// stops (engine.Stop).
	Stop Signals
	// Fault, when set, is the test-only fault-point hook (package
	// daemon/faultpoint), told of each phase's start, end and record.
	Fault func(point string)

	eng    *engine.Runner[Data]
	update *Update
	// saved is the record as this run last wrote it.
	saved []byte
}

// Update returns the update being run.
func (r *Runner) Update() *Update {
	if r.update == nil {
		r.update = &Update{Node: r.Node, NodeCurrent: r.NodeCurrent, CurrentName: r.Record.Current,
			DesiredName: r.Record.Desired, SingleNode: r.SingleNode, Runtime: r.Runtime}
		// A runner built for a view of the list (tests, --once-from
		// dry runs) has no status; no status means no lost record.
		if r.Status != nil {
			r.update.RecordLost = r.Status.RecordLost()
		}
	}
	return r.update
}

// ends are the errors with which a step ends the update's run without
// failing it.
var ends = []engine.End{
	{Err: ErrRebooting, Log: "Node is rebooting; the update goes on after boot"},
	{Err: ErrRolledBack, Log: "Update rolled back by the health gate; the node keeps its previous config"},
}

// Run runs every step not yet done. A resumed update (its record has done
// steps) first re-stages the status of those steps and reloads what they
// had produced. It returns nil once the update is complete, ErrRebooting
// when the node is going down for the post-action reboot, ErrStopped,
// ErrSuperseded or ErrPaused (see engine.Stop), ErrRolledBack after the
// health gate's rollback, or a *StepError. It writes the status as each
// step starts (when that shows something new) and once as the run ends
// (end).
func (r *Runner) Run(ctx context.Context) error {
	r.Update()
	sig := r.Stop
	if w := r.Env.Waits; w != nil {
		sig.Paused = func() (string, bool) { h, ok := w.Paused(); return h.Message, ok }
	}
	r.eng = &engine.Runner[Data]{
		Data: r, List: r.Phases, Record: r.Record, Save: r.SaveProgress, Status: r.Status, Flush: r.Flush,
		Groups: groupsOf(r.Record),
		Events: r.Events, Observer: r.Env.Observer, Ends: ends, Log: r.log(), Now: r.Now, Stop: sig, Fault: r.Fault,
	}
	return r.end(ctx, r.eng.Run(ctx, doneSteps(r.Record)))
}

// RestageFinished stages the status of rec's finished update as its run
// staged it, from the record alone: each done step's condition and each
// group's; nothing runs. The daemon calls it when the record says the
// update is over but the status still shows a phase under way.
func RestageFinished(list []Item, rec *progress.Record, st *status.Stager) {
	eng := &engine.Runner[Data]{List: list, Record: rec, Status: st, Groups: groupsOf(rec)}
	eng.Restage()
}

// groupsOf gives a group's messages, starting and done, for rec's update.
func groupsOf(rec *progress.Record) func(string) (string, string) {
	return func(c string) (string, string) {
		g := groupOf(c)
		return g.starting(rec.Desired), g.done(rec.Desired)
	}
}

func doneSteps(rec *progress.Record) []string {
	var names []string
	for _, s := range rec.Steps {
		names = append(names, s.Name)
	}
	return names
}

func (r *Runner) log() *zap.Logger {
	return r.Log.With(zap.String("config", r.Record.Desired))
}

// SaveProgress writes the progress record to the node, unless this run
// last wrote it as it is (the write step saves itself done before it drops
// its journal; the runner's save of that step would write it again). The
// daemon writes no other copy while the runner runs.
func (r *Runner) SaveProgress() error {
	data, err := r.Record.Marshal()
	if err != nil {
		return err
	}
	if bytes.Equal(data, r.saved) {
		return nil
	}
	if err := r.Env.Host.WriteState(progress.FileName, data); err != nil {
		return fmt.Errorf("saving progress: %w", err)
	}
	r.saved = data
	return nil
}
