package kured

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// sampleEvery is how often the timeline looks at the nodes: the figures'
// resolution.
const sampleEvery = 250 * time.Millisecond

// steps is one node's reboot as the timeline saw it, each a time since
// the sentinels were written (zero: not seen yet).
type steps struct {
	// cordoned: spec.unschedulable first true; down: the node's next boot
	// started (its systemd stopped, nspawn started it again); kubelet: its
	// kubelet's first status from that boot (a new heartbeat, Ready or
	// not); ready: its kubelet reported Ready from that boot; back: Ready
	// and uncordoned after it, in service.
	cordoned, down, kubelet, ready, back time.Duration
}

// timeline samples the nodes from the sentinels' writing until each is
// back in service after one reboot.
type timeline struct {
	start time.Time
	nodes map[string]*testbed.KubeNode
	boots map[string]int
	// beat is each node's last Ready heartbeat seen before its reboot.
	beat map[string]time.Time

	mu    sync.Mutex
	steps map[string]*steps
	// most is the most nodes out of service (cordoned, or rebooted and
	// not back) at one sample: the tool's concurrency as the nodes saw it.
	most int
}

func newTimeline(nodes map[string]*testbed.KubeNode) *timeline {
	tl := &timeline{nodes: nodes, boots: map[string]int{}, beat: map[string]time.Time{}, steps: map[string]*steps{}}
	for name, n := range nodes {
		tl.boots[name] = n.Sys.Boots()
		tl.steps[name] = &steps{}
	}
	return tl
}

// run samples until every node is back or ctx ends; start is when the
// sentinels were written.
func (tl *timeline) run(ctx context.Context, start time.Time) error {
	tl.start = start
	for {
		all, err := tl.sample(ctx)
		if err != nil {
			return err
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the nodes to be back in service: %w; so far:\n%s", ctx.Err(), tl.table())
		case <-time.After(sampleEvery):
		}
	}
}

// sample looks at each node once and reports whether all are back.
func (tl *timeline) sample(ctx context.Context) (bool, error) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	all, out := true, 0
	for name, n := range tl.nodes {
		node, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading node %s: %w", name, err)
		}
		at, s := time.Since(tl.start), tl.steps[name]
		rebooted := n.Sys.Boots() > tl.boots[name]
		if node.Spec.Unschedulable && s.cordoned == 0 {
			s.cordoned = at
		}
		ready, beat := readyBeat(node)
		if !rebooted {
			tl.beat[name] = beat
		}
		if rebooted && s.down == 0 {
			s.down = at
		}
		if rebooted && s.kubelet == 0 && beat.After(tl.beat[name]) {
			s.kubelet = at
		}
		if s.kubelet != 0 && s.ready == 0 && ready {
			s.ready = at
		}
		if s.ready != 0 && s.back == 0 && !node.Spec.Unschedulable && ready {
			s.back = at
		}
		if s.back == 0 {
			all = false
			if node.Spec.Unschedulable || rebooted {
				out++
			}
		}
	}
	tl.most = max(tl.most, out)
	return all, nil
}

// readyBeat is the node's Ready condition: whether it is True and its
// heartbeat (a new one after a reboot is the kubelet's first status from
// the new boot).
func readyBeat(n *corev1.Node) (bool, time.Time) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, c.LastHeartbeatTime.Time
		}
	}
	return false, time.Time{}
}

// last is when the last node was back in service.
func (tl *timeline) last() time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var last time.Duration
	for _, s := range tl.steps {
		last = max(last, s.back)
	}
	return last
}

// table is the per-node breakdown, in the order the nodes went down: when
// each step was reached (since the sentinels) and how long it took.
func (tl *timeline) table() string {
	var names []string
	for name := range tl.steps {
		names = append(names, name)
	}
	order := func(name string) time.Duration {
		if d := tl.steps[name].cordoned; d != 0 {
			return d
		}
		return time.Hour
	}
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			if order(names[j]) < order(names[i]) {
				names[i], names[j] = names[j], names[i]
			}
		}
	}
	var b strings.Builder
	// drain: cordon to the new boot (the drain, the tool's steps before
	// its reboot, the node's shutdown); boot: to the kubelet's first
	// status; ready: to Ready; uncordon: to back in service.
	fmt.Fprintf(&b, "%-8s %9s %9s %9s %9s %9s | %8s %8s %8s %8s\n", "node", "cordoned", "down", "kubelet", "ready", "back",
		"drain", "boot", "ready", "uncordon")
	for _, name := range names {
		s := tl.steps[name]
		fmt.Fprintf(&b, "%-8s %9s %9s %9s %9s %9s | %8s %8s %8s %8s\n", name, sec(s.cordoned), sec(s.down), sec(s.kubelet),
			sec(s.ready), sec(s.back), span(s.cordoned, s.down), span(s.down, s.kubelet), span(s.kubelet, s.ready),
			span(s.ready, s.back))
	}
	return b.String()
}

func sec(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func span(from, to time.Duration) string {
	if from == 0 || to == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fs", (to - from).Seconds())
}
