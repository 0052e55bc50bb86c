// Command demo shows nodeconfd as its users run it, on this machine, and
// as the README tells them to: it starts a local control plane
// (kube-apiserver, etcd, kube-scheduler, kube-controller-manager) and an
// OCI registry, pushes the release image built here (`make push`), applies
// the release manifest for it (`make release`: manifests/ with the image
// set), and boots three real nodes whose kubelets register them as
// kubeadm's do (no role labels) and whose containerd pulls the image and
// runs the DaemonSet's pods and the controller's. Then, with kubectl only: the first
// rollout (a MachineConfig fragment applied; the controller renders the
// worker pool's config and hands it to one node at a time; a containerd
// registry host file, which needs nothing after its write),
// a custom pool infra beside worker, and an update that drains and reboots,
// printing `kubectl get machineconfigpools` and `kubectl get
// machineconfignodes -o wide` each time they change. No desiredConfig is
// written by hand. It tears everything down at the end, on error, and on
// Ctrl-C or SIGTERM.
//
// Run it as root with `make demo`, which first builds what the bed needs
// (hack/setup.sh; cached in ~/.cache/nodeconfd after the first run).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// nodeNames are the demo's nodes; the first runs the controller's pods,
// the last becomes the infra pool's.
var nodeNames = []string{"worker-0", "worker-1", "infra-0"}

// rolloutTimeout bounds each step, from kubectl apply to every pool
// updated.
const rolloutTimeout = 8 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := run(ctx)
	if ctx.Err() != nil {
		fmt.Println("Interrupted; the test bed is torn down.")
		os.Exit(130)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) (err error) {
	dir, err := os.MkdirTemp("", "nodeconfd-demo-")
	if err != nil {
		return fmt.Errorf("creating a scratch folder: %w", err)
	}
	defer os.RemoveAll(dir)

	header("Starting the cluster: kube-apiserver, etcd, kube-scheduler, kube-controller-manager, a registry;\n" +
		"make push and make release for it; kubectl apply -f nodeconfd-release.yaml")
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	bed, err := testbed.StartCluster(startCtx, dir, os.Stdout)
	if err != nil {
		return fmt.Errorf("starting the cluster: %w", err)
	}
	defer bed.Stop()
	d := &demo{bed: bed, dir: dir}
	header(fmt.Sprintf("Booting nodes %v: systemd, containerd and a kubelet that registers each with its own certificate",
		nodeNames))
	defer func() {
		if err != nil && ctx.Err() == nil {
			fmt.Println("\nThe daemons' logs:")
			d.kubectl(context.Background(), "logs", "-n", testbed.Namespace, "-l", "app.kubernetes.io/name=nodeconfd",
				"--prefix", "--tail", "40")
		}
		header("Tearing down")
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		d.stop(sctx)
	}()
	if err := d.boot(startCtx); err != nil {
		return err
	}
	if err := d.join(startCtx); err != nil {
		return err
	}
	if err := d.steps(ctx); err != nil {
		return err
	}
	d.report(ctx)
	return ctx.Err()
}

// steps are the README's first rollout, a custom pool, and an update that
// drains and reboots, each through the controller.
func (d *demo) steps(ctx context.Context) error {
	header("The first rollout: one fragment for the worker pool (a containerd registry host file: no drain, no reboot, no restart)")
	if err := d.apply(ctx, mirrorFragment); err != nil {
		return err
	}
	if err := d.rollOut(ctx, poolGoal{"worker", 3, "99-worker-mirror"}); err != nil {
		return err
	}

	infra := nodeNames[2]
	header("A custom pool: " + infra + " labelled infra takes the worker fragments and its own")
	for _, f := range []fragment{infraPool, infraFragment} {
		if err := d.apply(ctx, f); err != nil {
			return err
		}
	}
	if err := d.label(ctx, infra, "node-role.kubernetes.io/infra"); err != nil {
		return err
	}
	if err := d.rollOut(ctx, poolGoal{"worker", 2, "99-worker-mirror"}, poolGoal{"infra", 1, "99-infra-mirror"}); err != nil {
		return err
	}

	header("An update that drains and reboots (a systemd unit and an /etc file), one node of each pool at a time")
	if err := createWorkload(ctx, d.bed.Kube, d.bed.Images().Workload); err != nil {
		return err
	}
	fmt.Println("A Deployment's pods for the drains to evict:")
	d.kubectl(ctx, "get", "pods", "-n", workloadNamespace, "-o", "wide")
	if err := d.apply(ctx, unitFragment); err != nil {
		return err
	}
	if err := d.rollOut(ctx, poolGoal{"worker", 2, "99-worker-demo-unit"}, poolGoal{"infra", 1, "99-worker-demo-unit"}); err != nil {
		return err
	}
	if err := waitRunning(ctx, d.bed.Kube); err != nil {
		return err
	}
	fmt.Println("The pods after the update: evicted by the drains, recreated by the Deployment, run again once a node is back:")
	d.kubectl(ctx, "get", "pods", "-n", workloadNamespace, "-o", "wide")
	return nil
}

// report shows what the daemon and the controller said and where the nodes are.
func (d *demo) report(ctx context.Context) {
	header("The daemons' logs, one line per decision (their containers after the reboots)")
	d.kubectl(ctx, "logs", "-n", testbed.Namespace, "-l", "app.kubernetes.io/name=nodeconfd", "--prefix", "--tail", "25")
	header("kubectl logs -n " + testbed.Namespace + " deploy/" + testbed.ControllerName + ": the controller")
	d.kubectl(ctx, "logs", "-n", testbed.Namespace, "deploy/"+testbed.ControllerName, "--tail", "25")
	header("kubectl describe machineconfignode/" + nodeNames[2])
	d.kubectl(ctx, "describe", "machineconfignode/"+nodeNames[2])
	header("Where the pools and nodes are")
	d.kubectl(ctx, "get", "machineconfigpools")
	d.kubectl(ctx, "get", "machineconfignodes", "-o", "wide")
	header("Events of the updates, with their durations")
	d.kubectl(ctx, "get", "events", "-A", "--field-selector", "involvedObject.kind=MachineConfigNode",
		"--sort-by=.lastTimestamp", "-o", "custom-columns=LAST SEEN:.lastTimestamp,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message")
}

func header(s string) {
	fmt.Printf("\n=== %s ===\n", s)
}

// errTimeout marks a step that did not finish in time.
var errTimeout = errors.New("the rollout did not finish in time")
