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
		{name: "no jitter", nodes: &countingNodes{nodes: 3}, wantMax: 0},
		{name: "ran here before", jitter: time.Minute, applied: true, nodes: &countingNodes{nodes: 1000}, wantMax: 0},
		{name: "ran here before, count fails", jitter: time.Minute, applied: true,
			nodes: &countingNodes{err: errors.New("forbidden")}, wantMax: 0},
		{name: "first start on the node", jitter: time.Minute, nodes: &countingNodes{nodes: 3}, wantMax: time.Minute},
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
		d.API = &kube.Client{API: nodesAPI{nodes: tt.nodes}, NodeName: "worker-1"}
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
		// Every start counts the nodes once, a restart too: the watches'
		// reconnect window grows with the cluster.
		if tt.nodes.lists != 20 {
			t.Errorf("%s: 20 starts listed the Nodes %d times, want 20", tt.name, tt.nodes.lists)
		}
		if want := kube.MinReconnectJitter; tt.nodes.nodes >= 1000 && d.API.ReconnectJitter() <= want {
			t.Errorf("%s: the reconnect window for %d nodes is %s, want over %s", tt.name, tt.nodes.nodes,
				d.API.ReconnectJitter(), want)
		}
	}
}
