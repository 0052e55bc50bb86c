package kube

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Only an attempt after a failed one waits; a success ends the waiting.
func TestReconnect(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel() // a wait would end at once with the context's error
	r := &reconnect{jitter: time.Hour}
	if err := r.before(cancelled); err != nil {
		t.Fatalf("first attempt waited: %v", err)
	}
	r.after(errors.New("connection refused"))
	if err := r.before(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("attempt after a failure: %v, want a wait", err)
	}
	r.after(nil)
	if err := r.before(cancelled); err != nil {
		t.Fatalf("attempt after a success waited: %v", err)
	}
}
