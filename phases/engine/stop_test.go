package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// The stop signal's causes: a new desired config stops the update only
// until it commits (and is taken back then), a shutdown always; the
// interrupt of a long step comes at once when superseded, a grace period
// after a shutdown.
func TestStopCauses(t *testing.T) {
	var changed atomic.Bool
	shutdown, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop, release := NewStop(Signals{Shutdown: shutdown, Grace: 300 * time.Millisecond, Superseded: changed.Load})
	defer release()
	if stop.Cause() != nil {
		t.Fatalf("cause %v before anything happened", stop.Cause())
	}
	interrupt, end := stop.stepContext(context.Background())
	defer end()
	changed.Store(true)
	select {
	case <-stop.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a new desired config did not stop the update")
	}
	if stop.Cause() != ErrSuperseded {
		t.Fatalf("cause %v, want ErrSuperseded", stop.Cause())
	}
	select {
	case <-interrupt.Done():
	case <-time.After(time.Second):
		t.Fatal("a superseded update's long step was not interrupted at once")
	}
	stop.Commit()
	if stop.Cause() != nil {
		t.Fatalf("cause %v after the commit, want none", stop.Cause())
	}
	interrupt, end2 := stop.stepContext(context.Background())
	defer end2()
	start := time.Now()
	cancel()
	<-stop.Context().Done()
	if stop.Cause() != ErrStopped {
		t.Fatalf("cause %v after the shutdown, want ErrStopped", stop.Cause())
	}
	<-interrupt.Done()
	if context.Cause(interrupt) != ErrStopped || time.Since(start) < 300*time.Millisecond {
		t.Errorf("interrupt %v after %v, want ErrStopped after the grace", context.Cause(interrupt), time.Since(start))
	}
}

// A pause cuts only a step whose Cut has Pause, while it runs: it is looked at as the
// step starts, its cause carries the pause's message, and leaving the step
// takes back a pause signal the step did not act on.
func TestStopPause(t *testing.T) {
	var paused atomic.Bool
	hold := func() (string, bool) { return "Paused by ops", paused.Load() }
	stop, release := NewStop(Signals{Paused: hold})
	defer release()
	paused.Store(true)
	time.Sleep(1500 * time.Millisecond) // a watch round: no step is Pausable yet
	if c := stop.Cause(); c != nil {
		t.Fatalf("cause %v outside a Pausable step, want none", c)
	}
	interrupt, end := stop.stepContext(context.Background())
	defer end()
	stop.Pausable(true)
	c := stop.Cause()
	var pe *PausedError
	if !errors.Is(c, ErrPaused) || errors.Is(c, ErrSuperseded) || !errors.As(c, &pe) ||
		pe.Message != "Paused by ops" {
		t.Fatalf("cause %v as a Pausable step starts, want ErrPaused with the hold", c)
	}
	<-interrupt.Done()
	if !errors.Is(context.Cause(interrupt), ErrPaused) {
		t.Errorf("interrupt cause %v, want ErrPaused at once", context.Cause(interrupt))
	}
	stop.Pausable(false)
	if c := stop.Cause(); c != nil {
		t.Errorf("cause %v after the Pausable step, want none", c)
	}
}
