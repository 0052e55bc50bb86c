package engine

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

// The runner's side of the gates and the cut.

// gates runs the gates that hold a needed step, in order, before it
// starts. A shutdown ends them, and the run stops with ErrStopped. A new
// desired config ends the gates of a step with a Cut (even ones that just
// ended well): the step is cut (see cut). Nothing of the step is done.
func (r *Runner[D]) gates(ctx context.Context, n *node[D], log *zap.Logger) error {
	// A gate may hold for hours: what was decided before it is saved first.
	if err := r.saveSkipped(); err != nil {
		return r.stepError(n, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.stop.Context(), func() {
		if c := r.stop.Cause(); c == ErrStopped || (IsCut(c) && n.step.Cut != nil) {
			cancel()
		}
	})()
	r.current, r.waiting = n, true
	var err error
	for _, g := range n.gates {
		if err = r.gate(wctx, g, log); err != nil {
			break
		}
	}
	r.current, r.waiting = nil, false
	r.observer().Waiting("")
	switch c := r.stop.Cause(); {
	case c == ErrStopped:
		log.Info("Stopped while waiting to start the phase")
		return ErrStopped
	case IsCut(c) && n.step.Cut != nil: // also after gates that ended well: the step is not for the new config
		return r.cut(ctx, n, c, log)
	case err == nil:
		return nil
	}
	return r.stepError(n, err)
}

// gate runs one gate; its Release runs however it ends.
func (r *Runner[D]) gate(ctx context.Context, g Gate[D], log *zap.Logger) error {
	if g.Release != nil {
		defer g.Release(context.WithoutCancel(ctx), r.Data)
	}
	return g.Wait(WithLog(ctx, log.With(zap.String("gate", g.Name))), r.Data)
}

// cut stops the run at a step, for cause (a new desired config, a pause):
// its Undo gives back what the run holds (its cordon), and the run stops
// with cause.
func (r *Runner[D]) cut(ctx context.Context, n *node[D], cause error, log *zap.Logger) error {
	if errors.Is(cause, ErrPaused) {
		log.Info("Phase stopped: the node was paused; the update waits at its cordon until the pause ends")
	} else {
		log.Info("Phase stopped: the node's desired config changed; the new config takes over")
	}
	if n.step.Cut != nil && n.step.Cut.Undo != nil {
		r.current = n
		settles, err := n.step.Cut.Undo(context.WithoutCancel(ctx), r.Data, cause)
		r.current = nil
		r.settle(settles)
		if err != nil {
			return r.stepError(n, err)
		}
	}
	return cause
}
