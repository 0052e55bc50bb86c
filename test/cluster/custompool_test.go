package cluster

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// The node annotations the tests read.
const (
	annCurrent = "machineconfiguration.openshift.io/currentConfig"
	annDesired = "machineconfiguration.openshift.io/desiredConfig"
	annState   = "machineconfiguration.openshift.io/state"
)

// customPool moves node into a new infra pool: labelled infra, it is
// handed the infra pool's config (the worker fragment and the infra one)
// and its MachineConfigNode names the pool; the workers keep theirs.
func customPool(ctx context.Context, t *testing.T, nodes map[string]*testbed.KubeNode, node string, workers []string) {
	t.Helper()
	workerTarget := waitPoolRendered(ctx, t, "worker", "99-worker-first")
	kubectlApply(ctx, t, testbed.CustomPoolYAML("infra"))
	kubectlApply(ctx, t, fragmentYAML("99-infra-first", "infra", infraFile, "docker:\n  infra.example: {}\n"))
	if _, err := bed.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"node-role.kubernetes.io/infra":""}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	target := waitPoolRendered(ctx, t, "infra", "99-infra-first")
	waitRunning(ctx, t, []string{node}, target)
	waitPoolCounts(ctx, t, "infra", 1)
	waitPoolCounts(ctx, t, "worker", int32(len(workers)))
	for path, want := range map[string]string{workerFile: "docker:\n  first.example: {}\n", infraFile: "docker:\n  infra.example: {}\n"} {
		if got := readNodeFile(t, nodes[node], path); got != want {
			t.Errorf("infra node %s: %s = %q, want %q", node, path, got, want)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		m, err := bed.MCfg.MachineconfigurationV1().MachineConfigNodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && m.Spec.Pool.Name == "infra", nil
	})
	if err != nil {
		t.Errorf("MachineConfigNode %s does not name pool infra: %v", node, err)
	}
	for _, w := range workers {
		if got := readNodeFile(t, nodes[w], infraFile); got != "" {
			t.Errorf("worker %s got the infra fragment: %s = %q", w, infraFile, got)
		}
		n, err := bed.Kube.CoreV1().Nodes().Get(ctx, w, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Annotations[annDesired]; got != workerTarget {
			t.Errorf("worker %s: desiredConfig %s, want the worker pool's %s", w, got, workerTarget)
		}
	}
}

// nodeDeletedTakesMCN takes a node out of the cluster (powered off, its
// Node deleted) and waits for the garbage collector to delete its
// MachineConfigNode, which the Node owns.
func nodeDeletedTakesMCN(ctx context.Context, t *testing.T, n *testbed.KubeNode) {
	t.Helper()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bed.Kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := bed.MCfg.MachineconfigurationV1().MachineConfigNodes().Get(ctx, n.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("node %s deleted, its MachineConfigNode still there after a minute: %v", n.Name, err)
	}
}
