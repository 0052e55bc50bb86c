// Command demo shows the daemon at work on this machine: it starts the test
// bed (a local control plane and one systemd node, worker-0, with its
// daemon), rolls out two rendered MachineConfigs one after the other and
// prints the node's MachineConfigNode table each time it changes. It tears
// everything down at the end, on error, and on Ctrl-C or SIGTERM.
//
// Run it as root with `make demo` (or `go run ./test/demo`).
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
	updateTimeout = 3 * time.Minute
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

	header("Starting the test bed: control plane, node " + nodeName + " and its daemon")
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	bed, err := testbed.Start(startCtx, dir, os.Stdout)
	if err != nil {
		return fmt.Errorf("starting the test bed: %w", err)
	}
	defer bed.Stop()
	configs := demoConfigs()
	for _, c := range configs {
		if err := bed.CreateConfig(startCtx, testbed.MachineConfig(c.name, c.ignition)); err != nil {
			return err
		}
	}
	node, err := bed.AddNode(startCtx, nodeName, testbed.NodeOptions{})
	if err != nil {
		return fmt.Errorf("adding node %s: %w", nodeName, err)
	}
	defer func() {
		if err != nil && ctx.Err() == nil {
			fmt.Printf("\nDaemon log of %s:\n%s\n", nodeName, node.DaemonLog())
		}
		header("Tearing down")
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		node.Stop(sctx)
	}()
	d := &demo{bed: bed, node: node}
	if err := d.join(startCtx, configs[0].name); err != nil {
		return err
	}

	header("Update 1: registries.d file → CRI-O reload, no reboot")
	if err := d.update(ctx, configs[1].name); err != nil {
		return err
	}
	d.summary()

	header("Update 2: systemd unit + /etc file → cordon, drain, reboot, uncordon")
	if err := createWorkload(ctx, bed.Kube, nodeName); err != nil {
		return err
	}
	fmt.Printf("Pods on %s before the update:\n", nodeName)
	d.kubectl(ctx, "get", "pods", "-n", workloadNamespace, "-o", "wide")
	if err := d.update(ctx, configs[2].name); err != nil {
		return err
	}
	d.summary()
	fmt.Printf("Pods on %s after the update (evicted; no controller-manager recreates them):\n", nodeName)
	d.kubectl(ctx, "get", "pods", "-n", workloadNamespace, "-o", "wide")

	header("kubectl describe machineconfignode/" + nodeName)
	d.kubectl(ctx, "describe", "machineconfignode/"+nodeName)
	header("Node annotations")
	d.annotations(ctx)
	header("Where the node is: kubectl get machineconfignodes -o wide")
	d.kubectl(ctx, "get", "machineconfignodes", "-o", "wide")
	header("Events of the updates, with their durations")
	d.kubectl(ctx, "get", "events", "-A", "--field-selector", "involvedObject.kind=MachineConfigNode,involvedObject.name="+nodeName,
		"--sort-by=.lastTimestamp", "-o", "custom-columns=LAST SEEN:.lastTimestamp,REASON:.reason,MESSAGE:.message")
	return ctx.Err()
}

func header(s string) {
	fmt.Printf("\n=== %s ===\n", s)
}

// errTimeout marks an update that did not finish in time.
var errTimeout = errors.New("update did not reach Updated=True in time")
