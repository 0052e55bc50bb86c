package phases

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

// The runner's side of the stop signal (stop.go): a step's wait ended by
// it, a step cut short by it.

// wait runs the phase's Wait before the phase starts. A shutdown ends the
// wait, and the run stops with ErrStopped. A new desired config ends the
// wait of a phase with an Undo (even one that just ended well): the phase
// is cut (see cut). Nothing of the phase is done.
func (r *Runner) wait(ctx context.Context, p *Phase, log *zap.Logger) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.stop.Context(), func() {
		if c := r.stop.Cause(); c == ErrStopped || (isCut(c) && p.Undo != nil) {
			cancel()
		}
	})()
	r.current, r.waiting = p, true
	err := p.Wait(wctx, r)
	r.current, r.waiting = nil, false
	r.Observer().Waiting("")
	switch c := r.stop.Cause(); {
	case c == ErrStopped:
		log.Info("Stopped while waiting to start the phase")
		return ErrStopped
	case isCut(c) && p.Undo != nil: // also after a wait that ended well: the phase is not for the new config
		return r.cut(ctx, p, c, log)
	case err == nil:
		return nil
	}
	return r.stepError(p, err)
}

// cut stops the update at a step, for cause (a new desired config, a
// pause): its Undo gives back what the update holds (its cordon), and the
// run stops with cause (end writes the status).
func (r *Runner) cut(ctx context.Context, p *Phase, cause error, log *zap.Logger) error {
	if errors.Is(cause, ErrPaused) {
		log.Info("Phase stopped: the node was paused; the update waits at its cordon until the pause ends")
	} else {
		log.Info("Phase stopped: the node's desired config changed; the new config takes over")
	}
	if p.Undo != nil {
		r.current = p
		err := p.Undo(ctx, r, cause)
		r.current = nil
		if err != nil {
			return r.stepError(p, err)
		}
	}
	return cause
}
