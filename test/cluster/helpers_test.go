package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// startNodes starts real nodes at once, records their MachineConfigNode
// status from before their daemons start, and annotates each, as soon as
// its kubelet has registered it, as running config base (with base "",
// leaves it as its kubelet registered it, as on a fresh cluster). When
// the test ends, the nodes are stopped and their Node objects deleted, as
// machines taken out of the cluster are.
func startNodes(ctx context.Context, t *testing.T, base string, names ...string) (map[string]*testbed.KubeNode, map[string]*testbed.StatusLog) {
	t.Helper()
	wctx, wcancel := context.WithCancel(context.Background())
	t.Cleanup(wcancel)
	logs := map[string]*testbed.StatusLog{}
	for _, name := range names {
		l, err := bed.RecordStatus(wctx, name)
		if err != nil {
			t.Fatal(err)
		}
		logs[name] = l
	}
	nodes, err := bed.AddKubeNodes(ctx, names, func(name string) error { return annotateOnRegistration(ctx, name, base) })
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, n := range nodes {
			if t.Failed() {
				out, _ := n.Sys.Exec(sctx, "journalctl", "--no-pager", "-n", "80", "-u", "kubelet", "-u", "containerd",
					"-u", "testbed-node")
				t.Logf("node %s: the journal's last lines:\n%s", n.Name, out)
			}
			if err := n.Stop(sctx); err != nil {
				t.Error(err)
			}
			if err := bed.Kube.CoreV1().Nodes().Delete(sctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting Node %s: %v", n.Name, err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return nodes, logs
}

// annotateOnRegistration waits for the kubelet to create the Node and marks
// it as running config, as the MCO's first rendering would.
func annotateOnRegistration(ctx context.Context, name, config string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		"machineconfiguration.openshift.io/desiredConfig": config,
		"machineconfiguration.openshift.io/currentConfig": config,
	}}})
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if config == "" {
			_, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return err == nil, nil
		}
		_, err := bed.Kube.CoreV1().Nodes().Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// waitDaemonSet waits until the DaemonSet's pods are ready on n nodes.
func waitDaemonSet(ctx context.Context, t *testing.T, n int32) *appsv1.DaemonSet {
	t.Helper()
	var ds *appsv1.DaemonSet
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var err error
		ds, err = bed.Kube.AppsV1().DaemonSets(testbed.Namespace).Get(ctx, testbed.DaemonSetName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := ds.Status
		return s.DesiredNumberScheduled == n && s.NumberReady == n && s.UpdatedNumberScheduled == n, nil
	})
	if err != nil {
		t.Fatalf("waiting for the DaemonSet to be ready on %d nodes: %v; status %+v", n, err, ds.Status)
	}
	return ds
}

// daemonPod returns the DaemonSet's pod on node. A pod that is being
// deleted does not count: right after a pod's deletion its successor and
// it are both listed until the kubelet has stopped it. It waits up to a
// minute for there to be exactly one.
func daemonPod(ctx context.Context, t *testing.T, node string) *corev1.Pod {
	t.Helper()
	var live []corev1.Pod
	deadline := time.Now().Add(time.Minute)
	for {
		pods, err := bed.Kube.CoreV1().Pods(testbed.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "spec.nodeName=" + node, LabelSelector: "app.kubernetes.io/name=nodeconfd"})
		if err != nil {
			t.Fatal(err)
		}
		live = live[:0]
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				live = append(live, p)
			}
		}
		if len(live) == 1 {
			return &live[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d daemon pods (not being deleted) on node %s, want 1", len(live), node)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitCurrent waits until a status from snapshot from on says the node
// runs config name.
func waitCurrent(ctx context.Context, log *testbed.StatusLog, from int, name string) error {
	_, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		if st.ConfigVersion == nil || st.ConfigVersion.Current != name {
			return false
		}
		c := testbed.Find(st, "Updated")
		return c != nil && c.Status == metav1.ConditionTrue
	})
	if err != nil {
		return fmt.Errorf("waiting for the node to run %s: %w; latest:\n%s", name, err, log.Describe())
	}
	return nil
}

// wantSeq checks that got is exactly want.
func wantSeq(t *testing.T, node string, got, want []string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("node %s: condition transitions:\n got: %s\nwant: %s", node, strings.Join(got, " "), strings.Join(want, " "))
	}
}

// wantEvents checks that the object has Events with these reasons.
func wantEvents(ctx context.Context, t *testing.T, name, kind string, reasons ...string) {
	t.Helper()
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := bed.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": name, "involvedObject.kind": kind}.String()})
		if err != nil {
			return false, err
		}
		have := map[string]bool{}
		for _, e := range evs.Items {
			have[e.Reason] = true
		}
		missing = missing[:0]
		for _, r := range reasons {
			if !have[r] {
				missing = append(missing, r)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Errorf("%s %s: no Events with reasons %v: %v", kind, name, missing, err)
	}
}
