package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Without a controller, a node whose desiredConfig an administrator sets by
// hand updates at once, as the upstream daemon does: the daemon keeps no
// cluster-wide bound of its own (nodeconfd controller paces a pool by
// handing the nodes their configs). Two nodes given a reboot update at the
// same moment are cordoned at the same time, neither waits for the other,
// and both reach the config. (The test bed's daemons run with
// --update-spread 0: nothing but the daemons themselves puts a start off.)
func TestHandSetConfigsUpdateAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	names := []string{"atonce-1", "atonce-2"}
	config(t, "rendered-atonce-a", ign(nil))
	config(t, "rendered-atonce-b", ign(map[string]string{"/etc/motd.d/atonce": "b\n"}))
	nodes := make([]*testbed.Node, len(names))
	logs := make([]*testbed.StatusLog, len(names))
	for i, name := range names {
		nodes[i], logs[i] = node(t, name, "rendered-atonce-a")
	}
	cordons := watchCordons(ctx, t, names)
	for _, n := range nodes {
		if err := n.SetDesired(ctx, "rendered-atonce-b"); err != nil {
			t.Fatal(err)
		}
	}
	for i, l := range logs {
		if err := waitCurrent(ctx, l, "rendered-atonce-b"); err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
	}
	if most, when := cordons.most(); most != len(names) {
		t.Errorf("at most %d nodes cordoned at once (%s), want both: each goes as soon as it is told", most, when)
	}
	for i, l := range logs {
		for _, c := range l.History("Cordoned") {
			if c.Reason == "Waiting" {
				t.Errorf("%s waited before its cordon: %q", names[i], c.Message)
			}
		}
		if b := nodes[i].Sys.Boots(); b != 2 {
			t.Errorf("%s booted %d times, want 2", names[i], b)
		}
	}
	a, b := cordons.firstCordon(names[0], time.Time{}), cordons.firstCordon(names[1], time.Time{})
	t.Logf("cordoned %s apart", a.Sub(b).Abs().Round(10*time.Millisecond))
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
