package phases

import (
	"context"
	"sync"
	"time"
)

// Stop is an update's one stop signal: it says why the update stops, as
// ErrStopped (the daemon shuts down) or ErrSuperseded (the node's desired
// config changed), and its Context is done once it does. What each cause
// stops:
//   - ErrStopped: the run, between two steps; a phase's Wait, at once; a
//     step that may wait without end (a blocked drain), a grace period
//     later, so that a drain close to its end may finish.
//   - ErrSuperseded: only what holds the node before anything is written:
//     the Wait and Run of the phases with OnSuperseded (the cordon and the
//     drain), at once. From the phase that Commits (the write) on, the
//     update runs to its end, and the new config's update starts from
//     what it wrote.
//
// A nil *Stop never stops.
type Stop struct {
	shutdown   context.Context
	superseded func() bool
	grace      time.Duration

	mu        sync.Mutex
	ctx       context.Context
	cancel    context.CancelCauseFunc
	committed bool
}

// NewStop returns the stop signal of one update: shutdown is done when the
// daemon shuts down; superseded reports whether the node's desired config
// is no longer the update's (read from the watch cache: no request), and
// is looked at every second until the update commits. release ends it.
func NewStop(shutdown context.Context, grace time.Duration, superseded func() bool) (stop *Stop, release func()) {
	s := &Stop{shutdown: shutdown, superseded: superseded, grace: grace}
	s.arm()
	done := make(chan struct{})
	if superseded != nil {
		go s.watch(done)
	}
	return s, func() {
		close(done)
		s.mu.Lock()
		s.cancel(nil)
		s.mu.Unlock()
	}
}

// arm starts a context that a shutdown cancels; s.mu held or not shared.
func (s *Stop) arm() {
	ctx, cancel := context.WithCancelCause(context.Background())
	context.AfterFunc(s.shutdown, func() { cancel(ErrStopped) })
	s.ctx, s.cancel = ctx, cancel
}

// supersededEvery is how often a running update looks at the node's
// desired config.
const supersededEvery = time.Second

func (s *Stop) watch(done <-chan struct{}) {
	t := time.NewTicker(supersededEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.committed || s.ctx.Err() != nil {
			s.mu.Unlock()
			return
		}
		if s.superseded() {
			s.cancel(ErrSuperseded)
		}
		s.mu.Unlock()
	}
}

// Commit is called as the update reaches the phase that Commits: from
// then on a new desired config no longer stops it (a superseded signal
// already given is taken back), only a shutdown does.
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

// Cause is why the update stops (ErrStopped, ErrSuperseded), nil while it
// goes on.
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

// Interrupt returns a context that is done when a step that may wait
// without end must give up: at once when superseded, a grace period after
// a shutdown. Its cause is the Stop's.
func (s *Stop) Interrupt() context.Context {
	if s == nil {
		return context.Background()
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	context.AfterFunc(s.Context(), func() {
		switch c := s.Cause(); c {
		case ErrSuperseded:
			cancel(c)
		case ErrStopped:
			time.AfterFunc(s.grace, func() { cancel(c) })
		default:
			cancel(nil) // the update ended
		}
	})
	return ctx
}
