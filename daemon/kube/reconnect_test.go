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
	r := &reconnect{jitter: func() time.Duration { return time.Hour }}
	if err := r.before(cancelled); err != nil {
		t.Fatalf("first attempt waited: %v", err)
	}
	r.after(errors.New("connection refused"), true)
	if err := r.before(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("attempt after a failure: %v, want a wait", err)
	}
	r.after(nil, false)
	if err := r.before(cancelled); err != nil {
		t.Fatalf("attempt after a list that succeeded waited: %v", err)
	}
	r.after(nil, true)
	if err := r.before(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("attempt after a watch that ended at once: %v, want a wait", err)
	}
	r.opened = time.Now().Add(-healthyWatch - time.Second)
	if err := r.before(cancelled); err != nil {
		t.Fatalf("attempt after a watch that lived past healthyWatch waited: %v", err)
	}
}

func TestReconnectJitter(t *testing.T) {
	for _, tt := range []struct {
		nodes int
		want  time.Duration
	}{
		{0, MinReconnectJitter}, // not counted yet
		{3, MinReconnectJitter},
		{500, MinReconnectJitter},
		{1000, 20 * time.Second},
		{2000, 40 * time.Second},
		{6000, MaxReconnectJitter},
		{1 << 40, MaxReconnectJitter},
	} {
		if got := ReconnectJitterFor(tt.nodes); got != tt.want {
			t.Errorf("ReconnectJitterFor(%d) = %s, want %s", tt.nodes, got, tt.want)
		}
	}
}
