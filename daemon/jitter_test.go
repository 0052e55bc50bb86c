package daemon

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/phases"
)

// stateHost is a host whose only state file is the applied config, or none.
type stateHost struct {
	phases.Host
	applied bool
}

func (h stateHost) ReadState(name string) ([]byte, error) {
	if h.applied && name == phases.AppliedFileName {
		return []byte("{}"), nil
	}
	return nil, fs.ErrNotExist
}

func TestStartDelay(t *testing.T) {
	tests := []struct {
		name     string
		jitter   time.Duration
		applied  bool
		spread   time.Duration
		nodes    *countingNodes
		wantMax  time.Duration // 0: no delay
		wantOver time.Duration
	}{
		{name: "no jitter", wantMax: 0},
		{name: "ran here before", jitter: time.Minute, applied: true, wantMax: 0},
		{name: "first start on the node", jitter: time.Minute, wantMax: time.Minute},
		{name: "a small cluster: the start jitter", jitter: 30 * time.Second, spread: DefaultUpdateSpread,
			nodes: &countingNodes{nodes: 10}, wantMax: 30 * time.Second},
		{name: "a large cluster: the spread's window", jitter: 30 * time.Second, spread: DefaultUpdateSpread,
			nodes: &countingNodes{nodes: 2001}, wantMax: 200 * time.Second, wantOver: 30 * time.Second},
		{name: "count fails: the start jitter", jitter: 30 * time.Second, spread: DefaultUpdateSpread,
			nodes: &countingNodes{err: errors.New("forbidden")}, wantMax: 30 * time.Second},
	}
	for _, tt := range tests {
		d := &Daemon{StartJitter: tt.jitter, UpdateSpread: tt.spread, Env: phases.Env{Host: stateHost{applied: tt.applied}},
			Log: zaptest.NewLogger(t)}
		if tt.nodes != nil {
			d.API = &kube.Client{API: nodesAPI{nodes: tt.nodes}, NodeName: "worker-1"}
		}
		spread := map[time.Duration]bool{}
		over := false
		for i := 0; i < 20; i++ {
			got := d.startDelay(context.Background())
			if got < 0 || got > tt.wantMax || (tt.wantMax > 0 && got == tt.wantMax) {
				t.Fatalf("%s: delay %s, want in [0, %s)", tt.name, got, tt.wantMax)
			}
			spread[got] = true
			over = over || got > tt.wantOver
		}
		if tt.wantMax > 0 && len(spread) < 10 {
			t.Errorf("%s: 20 delays took only %d values", tt.name, len(spread))
		}
		if tt.wantOver > 0 && !over {
			t.Errorf("%s: no delay of 20 over %s", tt.name, tt.wantOver)
		}
	}
}
