package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// slotLease is the lease duration of the budget tests: longer than a test
// node's reboot plus the daemon's start, short enough to wait for.
const slotLease = 20 * time.Second

// Three nodes, three daemons, one disruption slot: a reboot update rolled to
// all three at once disrupts one node at a time (a watch on the Nodes sees
// never two cordoned at once), the waiting nodes say who holds the slot with
// UpdateExecuted still False, and all three reach the config. Then a daemon
// killed while holding the slot loses it once the lease expires, another
// node proceeds, and the killed daemon, restarted, waits for the slot and
// finishes.
func TestDisruptionBudget(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	names := []string{"slot-1", "slot-2", "slot-3"}
	args := []string{"--disruption-slots", "1", "--disruption-lease-duration", slotLease.String()}
	config(t, "rendered-slot-a", ign(nil))
	config(t, "rendered-slot-b", ign(map[string]string{"/etc/motd.d/slot": "b\n"}))
	config(t, "rendered-slot-c", ign(map[string]string{"/etc/motd.d/slot": "c\n"}))
	nodes := make([]*testbed.Node, len(names))
	logs := make([]*testbed.StatusLog, len(names))
	for i, name := range names {
		nodes[i], logs[i] = nodeOpts(t, name, "rendered-slot-a", testbed.NodeOptions{ExtraArgs: args})
	}

	// Part 1: all three at once.
	cordons := watchCordons(ctx, t, names)
	for _, n := range nodes {
		if err := n.SetDesired(ctx, "rendered-slot-b"); err != nil {
			t.Fatal(err)
		}
	}
	for i, l := range logs {
		if err := waitCurrent(ctx, l, "rendered-slot-b"); err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
	}
	if most, when := cordons.most(); most != 1 {
		t.Errorf("%d nodes cordoned at once (%s), want 1", most, when)
	}
	waited := 0
	for i, l := range logs {
		if checkWaiting(t, names[i], l) {
			waited++
		}
		if getNode(t, names[i]).Spec.Unschedulable {
			t.Errorf("%s left cordoned", names[i])
		}
		if b := nodes[i].Sys.Boots(); b != 2 {
			t.Errorf("%s booted %d times, want 2 (one reboot)", names[i], b)
		}
	}
	if waited < 2 {
		t.Errorf("%d nodes waited for the slot, want at least 2 of 3", waited)
	}
	if h := slotHolder(ctx, t); h != "" {
		t.Errorf("slot still held by %s after the rollout", h)
	}

	// Part 2: slot-1's daemon is killed mid-drain, holding the slot. Its
	// node stays cordoned; once the lease expires slot-2 takes the slot and
	// cordons too. That is the one case, by design, where more nodes than
	// slots are cordoned at once (a dead holder must not stop the rollout):
	// exactly these two, never a third.
	cordons = watchCordons(ctx, t, names)
	podsOn(t, "slot-1", 3)
	if err := nodes[0].SetDesired(ctx, "rendered-slot-c"); err != nil {
		t.Fatal(err)
	}
	if err := killAfter(ctx, nodes[0], "rendered-slot-c", "cordon"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if h := slotHolder(ctx, t); h != "slot-1" {
		t.Fatalf("slot held by %q after the kill, want slot-1", h)
	}
	if err := nodes[1].SetDesired(ctx, "rendered-slot-c"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, logs[1], "rendered-slot-c"); err != nil {
		t.Fatalf("slot-2 did not proceed after slot-1's lease expired: %v", err)
	}
	took := cordons.firstCordon("slot-2", killed).Sub(killed)
	if took < slotLease-time.Second {
		t.Errorf("slot-2 cordoned %s after slot-1 was killed, before the %s lease expired", took, slotLease)
	}
	t.Logf("slot-2 cordoned %s after slot-1's daemon was killed", took.Round(100*time.Millisecond))
	if !checkWaiting(t, "slot-2", logs[1]) {
		t.Error("slot-2 never said it waited for slot-1")
	}
	// slot-1's daemon restarts: it takes the slot again before it drains.
	if err := nodes[0].StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, logs[0], "rendered-slot-c"); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, nodes[0], "/etc/motd.d/slot"); got != "c\n" {
		t.Errorf("slot-1 file = %q", got)
	}
	for _, name := range names[:2] {
		if getNode(t, name).Spec.Unschedulable {
			t.Errorf("%s left cordoned", name)
		}
	}
	if most, when := cordons.most(); most != 2 || when != "[slot-1 slot-2]" {
		t.Errorf("part 2: %d nodes cordoned at once (%s), want 2: the killed slot-1 and slot-2", most, when)
	}
	if h := slotHolder(ctx, t); h != "" {
		t.Errorf("slot still held by %s at the end", h)
	}
}

// checkWaiting reports whether the node ever waited for the slot, and
// checks that while it did UpdateExecuted was False and the message named
// another node of the test.
func checkWaiting(t *testing.T, name string, l *testbed.StatusLog) bool {
	t.Helper()
	cordoned, executed := l.History("Cordoned"), l.History("UpdateExecuted")
	waited := false
	for i, c := range cordoned {
		if c.Reason != "Waiting" {
			continue
		}
		waited = true
		if c.Status != metav1.ConditionFalse || i >= len(executed) || executed[i].Status != metav1.ConditionFalse {
			t.Errorf("%s waiting: Cordoned=%s, UpdateExecuted not False (%d/%d), want both False", name, c.Status, i, len(executed))
		}
		const prefix = "Waiting for a disruption slot (1 of 1 in use): held by slot-"
		if !strings.HasPrefix(c.Message, prefix) || strings.HasSuffix(c.Message, name) {
			t.Errorf("%s waiting message %q", name, c.Message)
		}
	}
	return waited
}

// slotHolder is the holder of the test budget's one slot (budgetOf), ""
// when free.
func slotHolder(ctx context.Context, t *testing.T) string {
	t.Helper()
	l, err := bed.Kube.CoordinationV1().Leases(testbed.Namespace).Get(ctx, budgetOf(t)+"-0", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// cordonLog follows, with a watch on Nodes, which of some nodes are
// cordoned, and remembers the most cordoned at once.
type cordonLog struct {
	mu       sync.Mutex
	cordoned map[string]bool
	max      int
	maxWhen  string
	first    map[string][]time.Time
}

func watchCordons(ctx context.Context, t *testing.T, names []string) *cordonLog {
	t.Helper()
	list, err := bed.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &cordonLog{cordoned: map[string]bool{}, first: map[string][]time.Time{}}
	watched := map[string]bool{}
	for _, n := range names {
		watched[n] = true
	}
	for i := range list.Items {
		if n := &list.Items[i]; watched[n.Name] {
			c.see(n)
		}
	}
	w, err := bed.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() {
		defer w.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					c.mu.Lock()
					c.maxWhen += " (watch ended early)"
					c.max = 99
					c.mu.Unlock()
					return
				}
				if n, isNode := ev.Object.(*corev1.Node); isNode && ev.Type == watch.Modified && watched[n.Name] {
					c.see(n)
				}
			}
		}
	}()
	return c
}

func (c *cordonLog) see(n *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.Spec.Unschedulable && !c.cordoned[n.Name] {
		c.first[n.Name] = append(c.first[n.Name], time.Now())
	}
	c.cordoned[n.Name] = n.Spec.Unschedulable
	var now []string
	for name, on := range c.cordoned {
		if on {
			now = append(now, name)
		}
	}
	sort.Strings(now)
	if len(now) > c.max {
		c.max, c.maxWhen = len(now), fmt.Sprint(now)
	}
}

func (c *cordonLog) most() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max, c.maxWhen
}

// firstCordon is when the node was first seen cordoned after since.
func (c *cordonLog) firstCordon(name string, since time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, at := range c.first[name] {
		if at.After(since) {
			return at
		}
	}
	return time.Time{}
}
