package daemon

import (
	"context"
	"errors"
	"io/fs"
	"strconv"
	"strings"
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

func TestFirstStartDelays(t *testing.T) {
	for _, tt := range []struct {
		u              float64
		jitter, spread time.Duration
		before, left   time.Duration
	}{
		{0, 30 * time.Second, 200 * time.Second, 0, 0},
		{0.5, 30 * time.Second, 0, 15 * time.Second, 0},                                // a small cluster: the jitter alone
		{0.5, 30 * time.Second, 10 * time.Second, 15 * time.Second, 0},                 // its spread shorter than the jitter
		{0.5, 30 * time.Second, 200 * time.Second, 15 * time.Second, 85 * time.Second}, // a large one: its spread
		{0.999, 30 * time.Second, 200 * time.Second, 29970 * time.Millisecond, 169830 * time.Millisecond},
	} {
		before, left := firstStartDelays(tt.u, tt.jitter, tt.spread)
		if before != tt.before || left != tt.left {
			t.Errorf("firstStartDelays(%v, %s, %s) = %s, %s; want %s, %s", tt.u, tt.jitter, tt.spread, before, left, tt.before, tt.left)
		}
	}
}

// Which starts count the cluster's nodes (one LIST of one Node), and what
// is kept: a first start counts after its first wait (none with the
// context cancelled during it), a restart reads the count kept on the
// node and counts only without one, and every count is kept and sizes the
// watches' reconnect window.
func TestStartCounts(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		jitter    time.Duration
		applied   bool
		kept      string
		nodes     *countingNodes
		ctx       context.Context
		wantLists int // over 5 starts
		wantKept  string
	}{
		{name: "no jitter", nodes: &countingNodes{nodes: 3}, wantLists: 5, wantKept: "3\n"},
		{name: "first start", jitter: time.Millisecond, nodes: &countingNodes{nodes: 2001}, wantLists: 5, wantKept: "2001\n"},
		{name: "first start, cancelled in its first wait", jitter: time.Hour, nodes: &countingNodes{nodes: 2001},
			ctx: cancelled, wantLists: 0},
		{name: "ran here before", jitter: time.Minute, applied: true, nodes: &countingNodes{nodes: 1000}, wantLists: 1,
			wantKept: "1000\n"},
		{name: "ran here before, count kept", jitter: time.Minute, applied: true, kept: "1000\n",
			nodes: &countingNodes{nodes: 1001}, wantLists: 0, wantKept: "1000\n"},
		{name: "ran here before, kept count garbled", jitter: time.Minute, applied: true, kept: "-5",
			nodes: &countingNodes{nodes: 1000}, wantLists: 1, wantKept: "1000\n"},
		{name: "ran here before, count fails", jitter: time.Minute, applied: true,
			nodes: &countingNodes{err: errors.New("forbidden")}, wantLists: 5},
	}
	for _, tt := range tests {
		host := &stateHost{files: map[string]string{}}
		if tt.applied {
			host.files[phases.AppliedFileName] = "{}"
		}
		if tt.kept != "" {
			host.files[NodeCountFileName] = tt.kept
		}
		ctx := tt.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		d := &Daemon{StartJitter: tt.jitter, UpdateSpread: time.Microsecond, Env: phases.Env{Ports: phases.Ports{Host: host}},
			Log: zaptest.NewLogger(t), API: &kube.Client{API: nodesAPI{nodes: tt.nodes}, NodeName: "worker-1"}}
		for i := 0; i < 5; i++ {
			err := d.waitStartDelay(ctx)
			if (err != nil) != (tt.ctx != nil) {
				t.Fatalf("%s: waitStartDelay: %v", tt.name, err)
			}
		}
		if tt.nodes.lists != tt.wantLists {
			t.Errorf("%s: 5 starts listed the Nodes %d times, want %d", tt.name, tt.nodes.lists, tt.wantLists)
		}
		if got := host.files[NodeCountFileName]; got != tt.wantKept && !(tt.wantKept == "" && got == tt.kept) {
			t.Errorf("%s: node count kept %q, want %q", tt.name, got, tt.wantKept)
		}
		counted, _ := strconv.Atoi(strings.TrimSpace(tt.wantKept)) // 0: none
		if want := kube.ReconnectJitterFor(counted); d.API.ReconnectJitter() != want {
			t.Errorf("%s: reconnect window %s, want %s (%d nodes)", tt.name, d.API.ReconnectJitter(), want, counted)
		}
	}
}

// A count no cluster has (an API server's made-up remainingItemCount) does
// not overflow, is not kept on the node, and gives the widest window.
func TestCountNodesMadeUp(t *testing.T) {
	host := &stateHost{files: map[string]string{}}
	d := &Daemon{Env: phases.Env{Ports: phases.Ports{Host: host}}, Log: zaptest.NewLogger(t),
		API: &kube.Client{API: nodesAPI{nodes: &countingNodes{nodes: 1 << 62}}, NodeName: "worker-1"}}
	n, err := d.countNodes(context.Background())
	if err != nil || n != kube.MaxNodes+1 {
		t.Fatalf("countNodes = %d, %v; want %d (clamped)", n, err, kube.MaxNodes+1)
	}
	if kept, ok := host.files[NodeCountFileName]; ok {
		t.Errorf("kept %q on the node", kept)
	}
	if got := d.API.ReconnectJitter(); got != kube.MaxReconnectJitter {
		t.Errorf("reconnect window %s, want %s", got, kube.MaxReconnectJitter)
	}
}
