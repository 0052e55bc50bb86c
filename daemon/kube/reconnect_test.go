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
	r := newReconnect(Retry{Window: func() time.Duration { return time.Hour }})
	if err := r.before(cancelled); err != nil {
		t.Fatalf("first attempt waited: %v", err)
	}
	r.after(errors.New("connection refused"), time.Hour)
	if err := r.before(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("attempt after a failure: %v, want a wait", err)
	}
	r.after(nil, 0)
	if err := r.before(cancelled); err != nil {
		t.Fatalf("attempt after a list that succeeded waited: %v", err)
	}
	r.after(nil, time.Hour)
	if err := r.before(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("attempt after a watch that ended at once: %v, want a wait", err)
	}
	r.opened = time.Now().Add(-healthyWatch - time.Second)
	if err := r.before(cancelled); err != nil {
		t.Fatalf("attempt after a watch that lived past healthyWatch waited: %v", err)
	}
}

// After a failure the attempt goes once a probe finds the server ready, or
// after maxNotReady probes that did not; without a failure, or without a
// probe, nothing is asked.
func TestReconnectProbes(t *testing.T) {
	for _, tt := range []struct {
		name       string
		answers    []bool // the probe's answers in turn; the last repeats
		noProbe    bool
		noFailure  bool
		wantProbes int
	}{
		{name: "Ready", answers: []bool{true}, wantProbes: 1},
		{name: "ReadyOnTheSecond", answers: []bool{false, true}, wantProbes: 2},
		{name: "NeverReady", answers: []bool{false}, wantProbes: maxNotReady},
		{name: "NoProbe", noProbe: true},
		{name: "NoFailure", answers: []bool{false}, noFailure: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			probes := 0
			retry := Retry{Window: func() time.Duration { return time.Millisecond }}
			if !tt.noProbe {
				retry.Ready = func(context.Context) bool {
					probes++
					return tt.answers[min(probes, len(tt.answers))-1]
				}
			}
			r := newReconnect(retry)
			if !tt.noFailure {
				r.after(errors.New("connection refused"), 0)
			}
			if err := r.before(context.Background()); err != nil {
				t.Fatal(err)
			}
			if probes != tt.wantProbes {
				t.Errorf("%d probes, want %d", probes, tt.wantProbes)
			}
		})
	}
}

// After a watch that lived, the attempt goes at once if the watch ended at
// its timeout; if it ended sooner (the server closed it), only once a probe
// finds the server ready, and else as after a failure.
func TestReconnectAfterWatch(t *testing.T) {
	for _, tt := range []struct {
		name       string
		lived      time.Duration // of a 30-minute watch
		ready      bool
		wantProbes int
		wantWait   bool
	}{
		{name: "EndedAtItsTimeout", lived: 30 * time.Minute, ready: false, wantProbes: 0},
		{name: "ClosedSoonerServerReady", lived: 20 * time.Minute, ready: true, wantProbes: 1},
		{name: "ClosedSoonerServerNotReady", lived: 20 * time.Minute, ready: false, wantProbes: 1, wantWait: true},
		{name: "ClosedAtOnce", lived: time.Second, ready: true, wantProbes: 0, wantWait: true}, // waits first
	} {
		t.Run(tt.name, func(t *testing.T) {
			probes := 0
			r := newReconnect(Retry{Window: func() time.Duration { return time.Hour },
				Ready: func(context.Context) bool { probes++; return tt.ready }})
			r.after(nil, 30*time.Minute)
			r.opened = time.Now().Add(-tt.lived)
			cancelled, cancel := context.WithCancel(context.Background())
			cancel() // a wait ends at once with the context's error
			err := r.before(cancelled)
			if waited := errors.Is(err, context.Canceled); waited != tt.wantWait {
				t.Errorf("waited: %v (%v), want %v", waited, err, tt.wantWait)
			}
			if probes != tt.wantProbes {
				t.Errorf("%d probes, want %d", probes, tt.wantProbes)
			}
		})
	}
}

// A cancelled wait ends with the context's error, probe or not.
func TestReconnectProbeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := newReconnect(Retry{Window: func() time.Duration { return time.Millisecond },
		Ready: func(context.Context) bool { cancel(); return false }})
	r.after(errors.New("connection refused"), 0)
	if err := r.before(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("before = %v, want the context's error", err)
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
