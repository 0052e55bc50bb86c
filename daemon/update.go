package daemon

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

func (d *Daemon) loadProgress(ctx context.Context) (*progress.Record, error) {
	data, err := d.Env.Host.ReadState(progress.FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return d.decodeProgress(ctx, data, err)
}

// updateUnderWay reports whether an update has begun on the node: its
// progress record is there (or cannot be read: loadProgress reports why).
func (d *Daemon) updateUnderWay() bool {
	_, err := d.Env.Host.ReadState(progress.FileName)
	return !errors.Is(err, fs.ErrNotExist)
}

// runner returns the runner of the update that rec records.
func (d *Daemon) runner(rec *progress.Record) *phases.Runner {
	env := d.Env
	env.Drift = &d.drift
	env.ConfigRule = d.ConfigPattern.For(d.pool)
	env.Provenance = d.Provenance.For(d.pool)
	list := d.phaseList()
	env.Observer = d.observeETA(env.Observer, rec, list) // etaobserver.go
	return &phases.Runner{
		Env: env, Status: d.status, Events: d.events, Log: d.Log.With(zap.String("node", d.node.Name)),
		Now: d.Now, Phases: list, Record: rec, Node: d.node.Name,
		NodeCurrent: d.node.Annotations[names.CurrentConfig], Fault: d.Fault,
		SingleNode: d.node.Annotations[names.ControlPlaneTopology] == names.SingleReplica,
		Runtime:    plan.RuntimeOf(d.node.Status.NodeInfo.ContainerRuntimeVersion),
	}
}

// update runs (or resumes) the update from current to desired: the list of
// phases.All, from give-back and adoption to resume. The steps themselves
// are not cancelled by a SIGTERM: the runner stops between steps, once the
// current one is done and saved (see phases.Stop).
func (d *Daemon) update(ctx context.Context, rec *progress.Record, current, desired string) error {
	d.stopDrift()
	r := d.runner(d.recordFor(rec, current, desired))
	grace := d.ShutdownGrace
	if grace <= 0 {
		grace = DefaultShutdownGrace
	}
	r.Stop = phases.Signals{Shutdown: ctx, Grace: grace, Superseded: func() bool {
		n, ok := d.Watcher.Node()
		now := ""
		if ok {
			now = n.Annotations[names.DesiredConfig]
		}
		return now != "" && now != desired
	}, Also: d.keepCordon(desired)} // keepcordon.go
	// The run stops for ctx through r.Stop; its end is written and a
	// failure reported even once ctx is done.
	stepCtx := context.WithoutCancel(ctx)
	err := r.Run(stepCtx)
	switch {
	case err == nil, errors.Is(err, phases.ErrRebooting), errors.Is(err, phases.ErrStopped):
		return err
	case errors.Is(err, phases.ErrSuperseded):
		d.Log.Info("Update stopped: the node's desired config changed; taking up the new one",
			zap.String("node", d.node.Name), zap.String("config", desired))
		return err
	case errors.Is(err, phases.ErrPaused): // its cordon given back; it waits at the cordon
		d.Log.Info("Update stopped: the node was paused; it waits uncordoned until the pause ends",
			zap.String("node", d.node.Name), zap.String("config", desired))
		return err
	case errors.Is(err, phases.ErrRolledBack): // the status says so; wait for a new desired config or a retry
		return nil
	}
	r.Fail(stepCtx, err)
	return err
}

// DefaultShutdownGrace leaves a drain time to finish after SIGTERM, well
// inside a pod's default 30 s termination grace period.
const DefaultShutdownGrace = 10 * time.Second

// recordFor returns the progress record of the update from current to
// desired: the one on disk when it is that update's, else a new one. When
// the desired config changed after the previous update's files were
// written, the new update starts from those files; before, it gives back
// what the replaced one held (progress.Replacing).
func (d *Daemon) recordFor(rec *progress.Record, current, desired string) *progress.Record {
	if rec != nil && rec.Desired == desired && !rec.Done(progress.StepResume) {
		return rec
	}
	if rec == nil || rec.Done(progress.StepResume) {
		return progress.New(current, desired)
	}
	from := rec.Current
	if rec.Done(progress.StepWrite) && !rec.RolledBack() {
		from = rec.Desired
	}
	return progress.Replacing(rec, from, desired)
}

// fail reports a failure outside an update's run (a leftover journal that
// cannot be cleaned up) as the update's.
func (d *Daemon) fail(ctx context.Context, rec *progress.Record, err error) error {
	d.runner(rec).Fail(ctx, err)
	return err
}
