package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/phases"
)

func TestSpreadDelay(t *testing.T) {
	tests := []struct {
		name      string
		nodes     int
		perNode   time.Duration
		wantUnder time.Duration // 0: no delay
	}{
		{"off", 1000, 0, 0},
		{"a lone node", 1, SuggestedUpdateSpread, 0},
		{"no count", 0, SuggestedUpdateSpread, 0},
		{"three nodes", 3, SuggestedUpdateSpread, 2 * SuggestedUpdateSpread},
		{"a thousand nodes", 1000, SuggestedUpdateSpread, 999 * SuggestedUpdateSpread},
		{"capped", 100000, SuggestedUpdateSpread, MaxUpdateSpread},
		{"capped without overflow", 3, 1 << 62, MaxUpdateSpread},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range 50 {
				node := fmt.Sprintf("worker-%d", i)
				got := spreadDelay(node, "rendered-worker-1", tt.nodes, tt.perNode)
				if tt.wantUnder == 0 && got != 0 || got < 0 || tt.wantUnder > 0 && got >= tt.wantUnder {
					t.Fatalf("%s: spreadDelay = %v, want in [0, %v)", node, got, tt.wantUnder)
				}
				if again := spreadDelay(node, "rendered-worker-1", tt.nodes, tt.perNode); again != got {
					t.Fatalf("%s: spreadDelay not the same twice: %v, %v", node, got, again)
				}
			}
		})
	}
}

// A cluster's nodes spread evenly over the window, each config anew: the
// first slots' nodes start early whatever the names.
func TestSpreadDelayEven(t *testing.T) {
	const nodes = 1000
	window := (nodes - 1) * SuggestedUpdateSpread
	for _, config := range []string{"rendered-worker-1", "rendered-worker-2"} {
		var deciles [10]int
		early := 0
		for i := range nodes {
			d := spreadDelay(fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/256, i%256), config, nodes, SuggestedUpdateSpread)
			deciles[int(d*10/window)]++
			if d < time.Second {
				early++
			}
		}
		for i, n := range deciles {
			if n < 70 || n > 130 {
				t.Errorf("%s: decile %d has %d of %d nodes: %v", config, i, n, nodes, deciles)
			}
		}
		if early < 5 {
			t.Errorf("%s: %d nodes start within 1s of a %v window, want about 20", config, early, window)
		}
	}
	if spreadDelay("a", "rendered-worker-1", nodes, SuggestedUpdateSpread) ==
		spreadDelay("a", "rendered-worker-2", nodes, SuggestedUpdateSpread) {
		t.Errorf("a node has the same point for two configs")
	}
}

// countingNodes answers a LIST of Nodes as the API server does with limit 1.
type countingNodes struct {
	kubeapi.Resource[*corev1.Node, *corev1.NodeList]
	nodes int
	err   error
	lists int
}

func (c *countingNodes) List(_ context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
	c.lists++
	if c.err != nil {
		return nil, c.err
	}
	if opts.Limit != 1 {
		return nil, fmt.Errorf("want a LIST of one Node, got limit %d", opts.Limit)
	}
	rest := int64(c.nodes - 1)
	return &corev1.NodeList{ListMeta: metav1.ListMeta{RemainingItemCount: &rest, Continue: "more"},
		Items: []corev1.Node{{}}}, nil
}

type nodesAPI struct {
	kubeapi.API
	nodes *countingNodes
}

func (a nodesAPI) Nodes() kubeapi.Resource[*corev1.Node, *corev1.NodeList] { return a.nodes }

// waits records what the metrics are told the daemon waits for.
type waits struct {
	phases.Observer
	got []string
}

func (w *waits) Waiting(reason string) { w.got = append(w.got, reason) }

// no is an update not under way.
func no() bool { return false }

func TestSpreadWait(t *testing.T) {
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	obs := &waits{}
	newDaemon := func(count *countingNodes) *Daemon {
		return &Daemon{API: &kube.Client{API: nodesAPI{nodes: count}, NodeName: "worker-7"},
			Log: zaptest.NewLogger(t), Now: func() time.Time { return now },
			Env:          phases.Env{Observer: obs, Ports: phases.Ports{Host: &stateHost{files: map[string]string{}}}},
			UpdateSpread: SuggestedUpdateSpread, mcn: &mcfgv1.MachineConfigNode{}}
	}
	want := spreadDelay("worker-7", "rendered-b", 1000, SuggestedUpdateSpread)
	if want <= time.Second {
		t.Fatalf("test set-up: worker-7's point %v, want one over 1s", want)
	}

	count := &countingNodes{nodes: 1000}
	d := newDaemon(count)
	if got := d.spreadWait(context.Background(), "rendered-a", "rendered-b", no); got != want {
		t.Fatalf("first pass: wait %v, want %v", got, want)
	}
	now = now.Add(time.Second)
	if got := d.spreadWait(context.Background(), "rendered-a", "rendered-b", no); got != want-time.Second {
		t.Fatalf("a second later: wait %v, want %v", got, want-time.Second)
	}
	now = now.Add(want)
	if got := d.spreadWait(context.Background(), "rendered-a", "rendered-b", no); got != 0 {
		t.Fatalf("once past: wait %v, want 0", got)
	}
	if count.lists != 1 {
		t.Fatalf("%d LISTs of Nodes for one config, want 1", count.lists)
	}
	if want := []string{phases.WaitUpdateSpread, ""}; !slices.Equal(obs.got, want) {
		t.Fatalf("metrics told the waits %q, want %q", obs.got, want)
	}

	for _, tt := range []struct {
		name             string
		current, desired string
		underWay, noMCN  bool
		spread           time.Duration
	}{
		{name: "off", current: "rendered-a", desired: "rendered-b"},
		{name: "update under way", current: "rendered-a", desired: "rendered-b", underWay: true, spread: SuggestedUpdateSpread},
		{name: "first pass after a start", current: "rendered-a", desired: "rendered-b", noMCN: true, spread: SuggestedUpdateSpread},
		{name: "at its config", current: "rendered-b", desired: "rendered-b", spread: SuggestedUpdateSpread},
	} {
		t.Run(tt.name, func(t *testing.T) {
			count := &countingNodes{nodes: 1000}
			d := newDaemon(count)
			d.UpdateSpread = tt.spread
			if tt.noMCN {
				d.mcn = nil
			}
			if got := d.spreadWait(context.Background(), tt.current, tt.desired, func() bool { return tt.underWay }); got != 0 || count.lists != 0 {
				t.Fatalf("wait %v after %d LISTs, want 0 after none", got, count.lists)
			}
		})
	}

	t.Run("back to its config during the spread", func(t *testing.T) {
		obs.got = nil
		d := newDaemon(&countingNodes{nodes: 1000})
		if got := d.spreadWait(context.Background(), "rendered-a", "rendered-b", no); got == 0 {
			t.Fatal("no spread")
		}
		if got := d.spreadWait(context.Background(), "rendered-a", "rendered-a", no); got != 0 {
			t.Fatalf("wait %v at its own config", got)
		}
		if want := []string{phases.WaitUpdateSpread, ""}; !slices.Equal(obs.got, want) {
			t.Fatalf("metrics told the waits %q, want %q", obs.got, want)
		}
	})

	t.Run("count fails", func(t *testing.T) {
		count := &countingNodes{err: errors.New("429 Too Many Requests")}
		d := newDaemon(count)
		for range 2 {
			if got := d.spreadWait(context.Background(), "rendered-a", "rendered-b", no); got != 0 {
				t.Fatalf("wait %v, want 0 (start at once)", got)
			}
		}
		if count.lists != 1 {
			t.Fatalf("%d LISTs, want 1: a retry of the same config starts at once", count.lists)
		}
	})
}
