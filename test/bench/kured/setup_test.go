package kured

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/test/testbed"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
	"github.com/nodeconfd/nodeconfd/test/testbed/images"
)

const (
	annCurrent = "machineconfiguration.openshift.io/currentConfig"
	annDesired = "machineconfiguration.openshift.io/desiredConfig"
	annState   = "machineconfiguration.openshift.io/state"
	// annRequested is nodeconfd's reboot request (daemon/kube).
	annRequested = "nodeconfd.io/reboot-requested"
	annGranted   = "nodeconfd.io/reboot-granted"
)

// startNodes starts the nodes at once and waits until each is Ready. When
// the benchmark ends they are stopped and their Node objects deleted.
func startNodes(ctx context.Context, b *testing.B, names ...string) map[string]*testbed.KubeNode {
	b.Helper()
	nodes, err := bed.AddKubeNodes(ctx, names, nil)
	b.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, n := range nodes {
			if err := n.Stop(sctx); err != nil {
				b.Error(err)
			}
			if err := bed.Kube.CoreV1().Nodes().Delete(sctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				b.Errorf("deleting Node %s: %v", n.Name, err)
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	poll(ctx, b, "the nodes Ready", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			if ready, _ := readyBeat(n); !ready {
				return false, nil
			}
		}
		return true, nil
	})
	return nodes
}

// poll polls cond every 250 ms until it holds, failing the benchmark
// with what when ctx ends first.
func poll(ctx context.Context, b *testing.B, what string, cond wait.ConditionWithContextFunc) {
	b.Helper()
	if err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, cond); err != nil {
		b.Fatalf("waiting for %s: %v", what, err)
	}
}

// daemonArgs adds args to the nodeconfd DaemonSet's container, before any
// node runs it.
func daemonArgs(ctx context.Context, b *testing.B, args ...string) {
	b.Helper()
	var ops []map[string]any
	for _, a := range args {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": a})
	}
	patch, _ := json.Marshal(ops)
	if _, err := bed.Kube.AppsV1().DaemonSets(testbed.Namespace).Patch(ctx, testbed.DaemonSetName, types.JSONPatchType, patch,
		metav1.PatchOptions{}); err != nil {
		b.Fatalf("adding %v to the daemon's arguments: %v", args, err)
	}
}

// daemonsOff takes the nodeconfd DaemonSet's pods off every node (a node
// selector no node matches) and waits until they are gone.
func daemonsOff(ctx context.Context, b *testing.B) {
	b.Helper()
	patch := []byte(`[{"op": "add", "path": "/spec/template/spec/nodeSelector/bench.nodeconfd.io~1none", "value": "true"}]`)
	if _, err := bed.Kube.AppsV1().DaemonSets(testbed.Namespace).Patch(ctx, testbed.DaemonSetName, types.JSONPatchType, patch,
		metav1.PatchOptions{}); err != nil {
		b.Fatalf("taking the daemons off the nodes: %v", err)
	}
	poll(ctx, b, "the daemons' pods gone", func(ctx context.Context) (bool, error) {
		pods, err := bed.Kube.CoreV1().Pods(testbed.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/name=" + testbed.DaemonSetName})
		return err == nil && len(pods.Items) == 0, err
	})
}

// waitDaemonSet waits until the DaemonSet's pods of generation gen are
// ready on n nodes.
func waitDaemonSet(ctx context.Context, b *testing.B, ns, name string, gen int64, n int32) {
	b.Helper()
	poll(ctx, b, "DaemonSet "+ns+"/"+name+" ready on every node", func(ctx context.Context) (bool, error) {
		ds, err := bed.Kube.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := ds.Status
		return s.ObservedGeneration >= gen && s.DesiredNumberScheduled == n && s.NumberReady == n &&
			s.UpdatedNumberScheduled == n && s.NumberAvailable == n, nil
	})
}

// settled waits until every node runs the worker pool's rendered config,
// done, with no reboot request or grant left.
func settled(ctx context.Context, b *testing.B, names []string) {
	b.Helper()
	poll(ctx, b, "the nodes on the worker pool's config, no request left", func(ctx context.Context) (bool, error) {
		p, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, "worker", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want := p.Spec.Configuration.Name
		if !strings.HasPrefix(want, "rendered-worker-") {
			return false, nil
		}
		for _, name := range names {
			n, err := bed.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			a := n.Annotations
			_, asked := a[annRequested]
			_, granted := a[annGranted]
			if a[annCurrent] != want || a[annDesired] != want || a[annState] != "Done" || asked || granted ||
				n.Spec.Unschedulable {
				return false, nil
			}
		}
		return true, nil
	})
}

// controllerReady waits until the controller's Deployment has its
// replicas ready (on the node set aside for them).
func controllerReady(ctx context.Context, b *testing.B) {
	b.Helper()
	poll(ctx, b, "the controller's replicas", func(ctx context.Context) (bool, error) {
		d, err := bed.Kube.AppsV1().Deployments(testbed.Namespace).Get(ctx, testbed.ControllerName, metav1.GetOptions{})
		return err == nil && d.Spec.Replicas != nil && d.Status.ReadyReplicas == *d.Spec.Replicas, err
	})
}

// startWorkload runs replicas idle pods spread over the nodes and waits
// until they are available.
func startWorkload(ctx context.Context, b *testing.B, replicas int32) {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNamespace}}
	if _, err := bed.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	d := workload(bed.Images().Workload, replicas)
	if _, err := bed.Kube.AppsV1().Deployments(workloadNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	workloadAvailable(ctx, b, replicas)
}

func workloadAvailable(ctx context.Context, b *testing.B, replicas int32) {
	b.Helper()
	poll(ctx, b, "the workload's pods", func(ctx context.Context) (bool, error) {
		d, err := bed.Kube.AppsV1().Deployments(workloadNamespace).Get(ctx, "idle", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == replicas && d.Status.UpdatedReplicas == replicas, err
	})
}

// buildKured builds kured (hack/build-kured.sh, cached) and pushes its
// image to the bed's registry; it returns the image's reference.
func buildKured(ctx context.Context, b *testing.B) string {
	b.Helper()
	bin, err := controlplane.RunHackScript(ctx, "build-kured.sh", bed.Log)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		b.Skipf("kured's source is not at hand: %v", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	version := strings.TrimPrefix(filepath.Base(filepath.Dir(bin)), "kured-")
	ref := bed.Registry() + "/kubereboot/kured:" + version
	if err := images.Kured(ctx, bin, ref); err != nil {
		b.Fatal(err)
	}
	return ref
}

// kuredSteady waits until kured's pod on each node has checked for the
// sentinel once ("Reboot not required"): past its start-up wait (a
// random 30 to 90 s), in its loop of one check a period.
func kuredSteady(ctx context.Context, b *testing.B, names []string) {
	b.Helper()
	poll(ctx, b, "kured checking every node's sentinel", func(ctx context.Context) (bool, error) {
		pods, err := bed.Kube.CoreV1().Pods(kuredNamespace).List(ctx, metav1.ListOptions{LabelSelector: "name=" + kuredName})
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			logs, err := bed.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err == nil && strings.Contains(string(logs), "Reboot not required") {
				seen[p.Spec.NodeName] = true
			}
		}
		for _, name := range names {
			if !seen[name] {
				return false, nil
			}
		}
		return true, nil
	})
}

// kuredUnlocked waits until no node holds kured's lock.
func kuredUnlocked(ctx context.Context, b *testing.B) {
	b.Helper()
	poll(ctx, b, "kured's lock released", func(ctx context.Context) (bool, error) {
		ds, err := bed.Kube.AppsV1().DaemonSets(kuredNamespace).Get(ctx, kuredName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, held := ds.Annotations[kuredLock]
		return !held, nil
	})
}

// kuredLogs returns the logs of kured's pods, for a failure.
func kuredLogs(ctx context.Context) string {
	pods, err := bed.Kube.CoreV1().Pods(kuredNamespace).List(ctx, metav1.ListOptions{LabelSelector: "name=" + kuredName})
	if err != nil {
		return err.Error()
	}
	var out strings.Builder
	for _, p := range pods.Items {
		logs, err := bed.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		fmt.Fprintf(&out, "--- %s on %s (%v):\n%s\n", p.Name, p.Spec.NodeName, err, logs)
	}
	return out.String()
}
