package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/phases"
)

// stateHost is a host whose state files are in files (the applied config's
// among them, or not).
type stateHost struct {
	phases.Host
	files map[string]string
}

func (h *stateHost) ReadState(name string) ([]byte, error) {
	if data, ok := h.files[name]; ok {
		return []byte(data), nil
	}
	return nil, fs.ErrNotExist
}

func (h *stateHost) WriteState(name string, data []byte) error {
	h.files[name] = string(data)
	return nil
}

func TestStartDelay(t *testing.T) {
	tests := []struct {
		name     string
		jitter   time.Duration
		applied  bool
		kept     string // the node count kept on the node
		spread   time.Duration
		nodes    *countingNodes
		wantMax  time.Duration // 0: no delay
		wantOver time.Duration
	}{
		{name: "no jitter", nodes: &countingNodes{nodes: 3}, wantMax: 0},
		{name: "ran here before", jitter: time.Minute, applied: true, nodes: &countingNodes{nodes: 1000}, wantMax: 0},
		{name: "ran here before, count kept", jitter: time.Minute, applied: true, kept: "1000\n",
			nodes: &countingNodes{nodes: 1001}, wantMax: 0},
		{name: "ran here before, kept count garbled", jitter: time.Minute, applied: true, kept: "-5",
			nodes: &countingNodes{nodes: 1000}, wantMax: 0},
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
		host := &stateHost{files: map[string]string{}}
		if tt.applied {
			host.files[phases.AppliedFileName] = "{}"
		}
		if tt.kept != "" {
			host.files[NodeCountFileName] = tt.kept
		}
		d := &Daemon{StartJitter: tt.jitter, UpdateSpread: tt.spread, Env: phases.Env{Host: host},
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
		// A first start counts the nodes; a restart reads the count kept
		// on the node, and counts (then keeps) it only when there is none
		// to read; each start's count sizes the watches' reconnect window.
		wantLists := 20
		switch {
		case tt.applied && tt.kept == "1000\n":
			wantLists = 0
		case tt.applied && tt.nodes.err == nil:
			wantLists = 1
		}
		if tt.nodes.lists != wantLists {
			t.Errorf("%s: 20 starts listed the Nodes %d times, want %d", tt.name, tt.nodes.lists, wantLists)
		}
		if tt.nodes.err == nil && tt.kept != "1000\n" && host.files[NodeCountFileName] != fmt.Sprintln(tt.nodes.nodes) {
			t.Errorf("%s: node count kept %q, want %d", tt.name, host.files[NodeCountFileName], tt.nodes.nodes)
		}
		if want := kube.MinReconnectJitter; (tt.nodes.nodes >= 1000 || tt.kept == "1000\n") && d.API.ReconnectJitter() <= want {
			t.Errorf("%s: the reconnect window for %d nodes is %s, want over %s", tt.name, tt.nodes.nodes,
				d.API.ReconnectJitter(), want)
		}
	}
}
