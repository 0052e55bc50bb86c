package engine

import (
	"context"

	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// RunSub runs list as a sub-list of the running step (the health gate's
// rollback), by name, with rec as its record: the same runner, so the same
// skipping of done steps, logs, fault points and saves (rec is part of the
// run's record, saved with it) as the run's own list. Its steps report
// through the running step's condition; they are named in the logs and
// fault points by name too ("rollback-write"). The Observer is not told of
// them: the running step is the one the metrics show running, and its
// duration holds theirs (told twice, the ETA would count them twice). A failure is returned as the
// sub-step gave it, which says what it was doing; an End (a reboot) too.
// A sub-list has no Commit and no step that Completes the run.
func (r *Runner[D]) RunSub(ctx context.Context, name string, rec Record, list []Item[D]) error {
	parent, outer := r.current, r.Record
	r.parent, r.Record = parent, rec
	defer func() { r.parent, r.Record, r.current = nil, outer, parent }()
	nodes := flatten(list)
	for i := range nodes {
		nodes[i].sub = name
	}
	return r.runNodes(ctx, nodes)
}

// Cuttable returns the context of a part of a step that a stop may cut:
// done, with the stop's cause, at once for a cut and a grace period after
// a shutdown (see Cut); release ends it.
func (r *Runner[D]) Cuttable(ctx context.Context) (context.Context, func()) {
	return r.stop.stepContext(ctx)
}

// Memory is a Record kept in memory only: a sub-list whose steps are each
// idempotent runs again from its first step after a restart.
type Memory struct{ steps []progress.Step }

// Step returns the named done step, or nil.
func (m *Memory) Step(name string) *progress.Step {
	for i := range m.steps {
		if m.steps[i].Name == name {
			return &m.steps[i]
		}
	}
	return nil
}

// MarkDone records a done step.
func (m *Memory) MarkDone(s progress.Step) {
	if old := m.Step(s.Name); old != nil {
		*old = s
		return
	}
	m.steps = append(m.steps, s)
}
