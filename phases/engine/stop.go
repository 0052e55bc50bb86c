package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrStopped is the cause of a stop for the daemon's shutdown: the runner
// stops between two steps, and the update resumes at the next start.
var ErrStopped = errors.New("stopped between steps for shutdown")

// ErrSuperseded is the cause of a stop for a new desired config: the steps
// that hold the node before anything is written (a wait, a blocked drain)
// give up and undo what they hold; the daemon goes on with the new config
// at once.
var ErrSuperseded = errors.New("stopped: the node's desired config changed")

// ErrPaused is the cause of a stop for the node's pause annotation, which
// cuts only the steps whose Cut has Pause (the drain): their Undo gives the
// cordon back, and the update waits at its cordon until the pause ends.
// Errors for a pause are *PausedError, which errors.Is matches to it.
var ErrPaused = errors.New("stopped: the node was paused")

// PausedError is the cause of a stop for a pause, with what the pause
// says (who paused the node and why).
type PausedError struct{ Message string }

func (e *PausedError) Error() string        { return ErrPaused.Error() + " (" + e.Message + ")" }
func (e *PausedError) Is(target error) bool { return target == ErrPaused }

// IsCut reports whether cause cuts a step with a Cut short: a new
// desired config or a pause, not a shutdown (a step cut by a shutdown runs
// again at the next start, holding what it held).
func IsCut(cause error) bool {
	return errors.Is(cause, ErrSuperseded) || errors.Is(cause, ErrPaused)
}

// Signals are where an update's stop comes from; the daemon gives them to
// its Runner, which watches them (Stop). The zero value never stops.
type Signals struct {
	// Shutdown is done when the daemon shuts down; nil for never.
	Shutdown context.Context
	// Superseded reports whether the node's desired config is no longer the
	// update's (from the watch cache: no request); nil for never.
	Superseded func() bool
	// Paused reports whether the node is paused, and what the pause says;
	// nil for never.
	Paused func() (string, bool)
	// Grace is how long a step that may wait without end (a drain) may go
	// on after a shutdown, to finish if it is close to its end.
	Grace time.Duration
	// Also are looked at with the signals, each round of the one watcher,
	// from the watch cache (the daemon's cordon kept while the update
	// holds it); each call's context ends with the run, and after
	// alsoTimeout.
	Also []func(ctx context.Context)
}

// Stop is an update's one stop signal, watched by one goroutine: its
// Context is done once the update stops, with one of three causes.
//   - ErrStopped (the daemon shuts down): the run, between two steps; a
//     step's Wait, at once; a step that may wait without end (a blocked
//     drain), a grace period later.
//   - ErrSuperseded (a new desired config): only the steps with a Cut,
//     before anything is written (the cordon's wait, the drain, the gate).
//     From the list's Commit (before the write) on, the update runs to its
//     end, and the new config's update starts from what it wrote.
//   - ErrPaused (the node's pause annotation): only a step whose Cut has
//     Pause (the drain), while it runs; everywhere else a pause is a hold
//     that the gates report.
//
// A nil *Stop never stops.
type Stop struct {
	sig Signals

	mu        sync.Mutex
	ctx       context.Context
	cancel    context.CancelCauseFunc
	committed bool
	pausable  bool
}

// NewStop starts watching sig; release ends it.
func NewStop(sig Signals) (stop *Stop, release func()) {
	if sig.Shutdown == nil {
		sig.Shutdown = context.Background()
	}
	s := &Stop{sig: sig}
	s.arm()
	// also is the context of the Also calls: ended as the run ends, which
	// waits for the watcher, so that none lands after the run.
	also, endAlso := context.WithCancel(sig.Shutdown)
	done, exited := make(chan struct{}), make(chan struct{})
	if sig.Superseded != nil || sig.Paused != nil || len(sig.Also) > 0 {
		go s.watch(also, done, exited)
	} else {
		close(exited)
	}
	return s, func() {
		close(done)
		endAlso()
		<-exited
		s.mu.Lock()
		s.cancel(nil)
		s.mu.Unlock()
	}
}

// arm starts a context that a shutdown cancels; s.mu held or not shared.
func (s *Stop) arm() {
	ctx, cancel := context.WithCancelCause(context.Background())
	context.AfterFunc(s.sig.Shutdown, func() { cancel(ErrStopped) })
	s.ctx, s.cancel = ctx, cancel
}

// stopEvery is how often a running update looks at the node's desired
// config and pause annotation (both from the watch cache: no request).
const stopEvery = time.Second

// alsoTimeout bounds one Also call (a request to the API server), so that a
// slow server delays the next look at the signals by that much at most.
const alsoTimeout = 5 * time.Second

func (s *Stop) watch(also context.Context, done <-chan struct{}, exited chan<- struct{}) {
	defer close(exited)
	t := time.NewTicker(stopEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		s.check()
		for _, f := range s.sig.Also {
			ctx, cancel := context.WithTimeout(also, alsoTimeout)
			f(ctx)
			cancel()
		}
	}
}

// check looks at the signals once, and stops the update for the first
// that applies now.
func (s *Stop) check() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	if !s.committed && s.sig.Superseded != nil && s.sig.Superseded() {
		s.cancel(ErrSuperseded)
		return
	}
	if s.pausable && s.sig.Paused != nil {
		if msg, ok := s.sig.Paused(); ok {
			s.cancel(&PausedError{Message: msg})
		}
	}
}

// Commit is called as the update reaches the list's Commit: from then
// on a new desired config no longer stops it (a superseded signal already
// given is taken back), only a shutdown does.
func (s *Stop) Commit() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.committed = true
	if s.ctx.Err() != nil && context.Cause(s.ctx) == ErrSuperseded {
		s.arm()
	}
}

// Pausable says whether a pause cuts the step that runs now. Entering such
// a step looks at the pause at once; leaving it takes back a pause signal
// the step did not act on (it had ended well).
func (s *Stop) Pausable(on bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.pausable = on
	if !on && s.ctx.Err() != nil && errors.Is(context.Cause(s.ctx), ErrPaused) {
		s.arm()
	}
	s.mu.Unlock()
	if on {
		s.check()
	}
}

// Cause is why the update stops (ErrStopped, ErrSuperseded, a
// *PausedError), nil while it goes on.
func (s *Stop) Cause() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// Context is done once the update stops; see Cause for why.
func (s *Stop) Context() context.Context {
	if s == nil {
		return context.Background()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

// stepContext returns the context a step with a Cut runs on: parent's
// values, done when the step must give up, at once when cut (superseded,
// paused), a grace period after a shutdown, with the Stop's cause. release
// ends it once the step is over.
func (s *Stop) stepContext(parent context.Context) (ctx context.Context, release func()) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	stop := context.AfterFunc(s.Context(), func() {
		switch c := s.Cause(); {
		case IsCut(c):
			cancel(c)
		case c == ErrStopped: // a cancel after release changes nothing
			time.AfterFunc(s.sig.Grace, func() { cancel(c) })
		}
	})
	return ctx, func() {
		stop()
		cancel(nil)
	}
}
