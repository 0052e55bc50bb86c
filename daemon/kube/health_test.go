package kube_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/names"
)

func failedNode(name, failed string, label bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
	if failed != "" {
		n.Annotations[names.FailedConfig] = failed
		n.Annotations[names.DesiredConfig] = failed
	}
	if label {
		n.Labels[names.FailedConfigHashLabel] = kube.FailedConfigHash("rendered-worker-2")
	}
	return n
}

// The label finds the failing nodes; the annotation decides: a label alone
// holds no one, nor does the node's own failure.
func TestFailedOnLabelAndAnnotation(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(failedNode("a", "rendered-worker-2", true), failedNode("b", "", true),
		failedNode("c", "rendered-worker-2", false), failedNode("d", "rendered-worker-3", false))
	c := &kube.Client{API: kubetest.API(cs, nil), NodeName: "a"}
	if got, err := c.FailedOn(ctx, "rendered-worker-2"); err != nil || got != "" {
		t.Errorf("FailedOn from a = %q, %v; want none (its own failure, a label alone, an annotation unlabelled)", got, err)
	}
	c.NodeName = "x"
	if got, err := c.FailedOn(ctx, "rendered-worker-2"); err != nil || got != "a" {
		t.Errorf("FailedOn from x = %q, %v; want a", got, err)
	}
	// A report of a node given another config since has lapsed.
	moved := failedNode("e", "rendered-worker-2", true)
	moved.Annotations[names.DesiredConfig] = "rendered-worker-4"
	cs = fake.NewClientset(moved)
	c = &kube.Client{API: kubetest.API(cs, nil), NodeName: "x"}
	if got, err := c.FailedOn(ctx, "rendered-worker-2"); err != nil || got != "" {
		t.Errorf("FailedOn = %q, %v; want none (e was given another config)", got, err)
	}
	// Its own daemon removes the report and the label.
	own := &kube.Client{API: kubetest.API(cs, nil), NodeName: "e"}
	if patched, err := own.SyncFailedConfigLabel(ctx, moved); err != nil || !patched {
		t.Fatalf("SyncFailedConfigLabel of a lapsed report: %v, %v", patched, err)
	}
	if n, _ := cs.CoreV1().Nodes().Get(ctx, "e", metav1.GetOptions{}); n.Annotations[names.FailedConfig] != "" ||
		n.Labels[names.FailedConfigHashLabel] != "" {
		t.Errorf("lapsed report left: %v %v", n.Annotations, n.Labels)
	}
	if h := kube.FailedConfigHash("rendered-worker-2"); len(h) != 32 {
		t.Errorf("hash %q: want 32 hex digits", h)
	}
}

// The wait names the failing node, and ends when its annotation goes.
func TestWaitNotFailedOnEndsWithTheAnnotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := fake.NewClientset(failedNode("a", "rendered-worker-2", true))
	c := &kube.Client{API: kubetest.API(cs, nil), NodeName: "x"}
	seen := make(chan string, 4)
	done := make(chan error, 1)
	go func() { done <- c.WaitNotFailedOn(ctx, "rendered-worker-2", func(n string) { seen <- n }) }()
	select {
	case n := <-seen:
		if n != "a" {
			t.Errorf("failed on %q, want a", n)
		}
	case err := <-done:
		t.Fatalf("wait ended with the failure still there: %v", err)
	}
	// An administrator removes the annotation; the label stays a moment.
	n, err := cs.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// (The fake's watch does not resume from a resourceVersion: the node
	// is touched until the watch, opened after the list, sees it.)
	delete(n.Annotations, names.FailedConfig)
	for i := 0; ; i++ {
		n.Annotations["touch"] = string(rune('a' + i%26))
		if n, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("wait: %v", err)
			}
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}
	// The node's own daemon then removes the label.
	own := &kube.Client{API: kubetest.API(cs, nil), NodeName: "a"}
	if patched, err := own.SyncFailedConfigLabel(ctx, n); err != nil || !patched {
		t.Fatalf("SyncFailedConfigLabel: %v, %v", patched, err)
	}
	if n, _ = cs.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{}); n.Labels[names.FailedConfigHashLabel] != "" {
		t.Errorf("label left: %v", n.Labels)
	}
	if patched, err := own.SyncFailedConfigLabel(ctx, n); err != nil || patched {
		t.Errorf("SyncFailedConfigLabel on a node in step: %v, %v; want no patch", patched, err)
	}
}
