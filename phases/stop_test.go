package phases_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/phases"
)

// The stop signal's causes: a new desired config stops the update only
// until it commits (and is taken back then), a shutdown always; the
// interrupt of a long step comes at once when superseded, a grace period
// after a shutdown.
func TestStopCauses(t *testing.T) {
	var changed atomic.Bool
	shutdown, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop, release := phases.NewStop(shutdown, 300*time.Millisecond, changed.Load)
	defer release()
	if stop.Cause() != nil {
		t.Fatalf("cause %v before anything happened", stop.Cause())
	}
	interrupt := stop.Interrupt()
	changed.Store(true)
	select {
	case <-stop.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a new desired config did not stop the update")
	}
	if stop.Cause() != phases.ErrSuperseded {
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
	interrupt = stop.Interrupt()
	start := time.Now()
	cancel()
	<-stop.Context().Done()
	if stop.Cause() != phases.ErrStopped {
		t.Fatalf("cause %v after the shutdown, want ErrStopped", stop.Cause())
	}
	<-interrupt.Done()
	if context.Cause(interrupt) != phases.ErrStopped || time.Since(start) < 300*time.Millisecond {
		t.Errorf("interrupt %v after %v, want ErrStopped after the grace", context.Cause(interrupt), time.Since(start))
	}
}
