// Command demo shows the daemon as its users run it, on this machine: it
// starts a local control plane (kube-apiserver, etcd, kube-scheduler,
// kube-controller-manager), applies manifests/ as shipped (the image
// reference rewritten to the release image built here), and boots one real
// node, worker-0, whose kubelet registers it and whose containerd runs the
// DaemonSet's pod. It then rolls out two rendered MachineConfigs, a CRI-O
// reload and a drain and reboot, printing the node's MachineConfigNode
// table each time it changes, and shows the daemon's log with kubectl. It
// tears everything down at the end, on error, and on Ctrl-C or SIGTERM.
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

const (
	nodeName = "worker-0"
	// updateTimeout bounds each update, from desiredConfig to Updated=True.
	updateTimeout = 4 * time.Minute
)

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

	header("Starting the cluster: kube-apiserver, etcd, kube-scheduler, kube-controller-manager; kubectl apply -f manifests/")
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	bed, err := testbed.StartCluster(startCtx, dir, os.Stdout)
	if err != nil {
		return fmt.Errorf("starting the cluster: %w", err)
	}
	defer bed.Stop()
	configs := demoConfigs()
	for _, c := range configs {
		if err := bed.CreateConfig(startCtx, testbed.MachineConfig(c.name, c.ignition)); err != nil {
			return err
		}
	}
	d := &demo{bed: bed}
	header("Booting node " + nodeName + ": systemd, containerd and a kubelet that registers it with its own certificate")
	if err := d.boot(startCtx, configs[0].name); err != nil {
		return err
	}
	defer func() {
		if err != nil && ctx.Err() == nil {
			fmt.Println("\nThe daemon's log:")
			d.kubectl(context.Background(), "logs", "-n", testbed.Namespace, "ds/"+testbed.DaemonSetName)
		}
		header("Tearing down")
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		if err := d.node.Stop(sctx); err != nil {
			fmt.Println(err)
		}
	}()
	if err := d.join(startCtx, configs[0].name); err != nil {
		return err
	}
	if err := d.updates(ctx, configs); err != nil {
		return err
	}
	d.report(ctx)
	return ctx.Err()
}

// updates rolls out update 1 (CRI-O reload) and update 2 (drain and
// reboot, with a Deployment's pods on the node to evict).
func (d *demo) updates(ctx context.Context, configs []config) error {
	header("Update 1: registries.d file → CRI-O reload, no drain, no reboot")
	if err := d.update(ctx, configs[1].name); err != nil {
		return err
	}
	d.summary()

	header("Update 2: systemd unit + /etc file → cordon, drain, reboot, uncordon")
	if err := createWorkload(ctx, d.bed.Kube); err != nil {
		return err
	}
	fmt.Println("A Deployment's pods for the drain to evict:")
	d.kubectl(ctx, "get", "pods", "-n", workloadNamespace, "-o", "wide")
	if err := d.update(ctx, configs[2].name); err != nil {
		return err
	}
	d.summary()
	if err := waitRunning(ctx, d.bed.Kube); err != nil {
		return err
	}
	fmt.Println("The pods after the update: evicted by the drain, recreated by the Deployment, run again once the node is back:")
	d.kubectl(ctx, "get", "pods", "-n", workloadNamespace, "-o", "wide")
	fmt.Println("The daemon's pod: the kubelet restarted its container after the reboot, and the new one finished the update:")
	d.kubectl(ctx, "get", "pods", "-n", testbed.Namespace, "-o", "wide")
	return nil
}

// report shows what the daemon said and where the node is.
func (d *demo) report(ctx context.Context) {
	ds := "ds/" + testbed.DaemonSetName
	header("kubectl logs -n " + testbed.Namespace + " " + ds + " --previous: the container before the reboot")
	d.kubectl(ctx, "logs", "-n", testbed.Namespace, ds, "--previous")
	header("kubectl logs -n " + testbed.Namespace + " " + ds + ": the container after it")
	d.kubectl(ctx, "logs", "-n", testbed.Namespace, ds)
	header("kubectl describe machineconfignode/" + nodeName)
	d.kubectl(ctx, "describe", "machineconfignode/"+nodeName)
	header("Node annotations")
	d.annotations(ctx)
	header("Where the node is: kubectl get machineconfignodes -o wide")
	d.kubectl(ctx, "get", "machineconfignodes", "-o", "wide")
	header("Events of the updates, with their durations")
	d.kubectl(ctx, "get", "events", "-A", "--field-selector", "involvedObject.kind=MachineConfigNode,involvedObject.name="+nodeName,
		"--sort-by=.lastTimestamp", "-o", "custom-columns=LAST SEEN:.lastTimestamp,REASON:.reason,MESSAGE:.message")
}

func header(s string) {
	fmt.Printf("\n=== %s ===\n", s)
}

// errTimeout marks an update that did not finish in time.
var errTimeout = errors.New("update did not reach Updated=True in time")
