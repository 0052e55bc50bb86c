package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

const annotationPrefix = "machineconfiguration.openshift.io/"

// demo drives one real node of a cluster bed.
type demo struct {
	bed  *testbed.Bed
	node *testbed.KubeNode
	log  *testbed.StatusLog
	// bootsBefore and reloadsBefore are the node's counts when the last
	// update started.
	bootsBefore, reloadsBefore int
	// statusesBefore is how many statuses the watch had seen then.
	statusesBefore int
	took           time.Duration
}

// boot starts the node, and marks it, as soon as its kubelet has
// registered it, as running config base, as a freshly installed node runs
// it. The status watch, started first so that it sees the daemon's first
// write, lives as long as ctx.
func (d *demo) boot(ctx context.Context, base string) error {
	log, err := d.bed.RecordStatus(context.WithoutCancel(ctx), nodeName)
	if err != nil {
		return fmt.Errorf("watching the MachineConfigNode of %s: %w", nodeName, err)
	}
	d.log = log
	if d.node, err = d.bed.AddKubeNode(ctx, nodeName); err != nil {
		return fmt.Errorf("adding node %s: %w", nodeName, err)
	}
	// The controller's Deployment runs only on control-plane nodes or on nodes set aside for it:
	// the demo's cluster has no control-plane node, so its one node is set aside.
	fmt.Printf("kubectl label node %s %s=\n", nodeName, testbed.ControllerNodeLabel)
	if err := d.bed.LabelControllerNode(ctx, nodeName); err != nil {
		return err
	}
	patch := map[string]string{annotationPrefix + "currentConfig": base, annotationPrefix + "desiredConfig": base}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := d.annotate(ctx, patch)
		if apierrors.IsNotFound(err) {
			return false, nil // not registered yet
		}
		return err == nil, err
	})
}

// join waits for the DaemonSet's pod on the node, then for the daemon to
// report the node up to date.
func (d *demo) join(ctx context.Context, base string) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := d.bed.Kube.AppsV1().DaemonSets(testbed.Namespace).Get(ctx, testbed.DaemonSetName, metav1.GetOptions{})
		return err == nil && ds.Status.NumberReady == 1, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the DaemonSet's pod on %s: %w", nodeName, err)
	}
	d.kubectl(ctx, "get", "nodes", "-o", "wide")
	fmt.Printf("\nThe DaemonSet as shipped, its image the release image built here (%s) and imported into the node:\n",
		d.bed.Images().DaemonRef)
	d.kubectl(ctx, "get", "daemonsets,pods", "-n", testbed.Namespace, "-o", "wide")
	wctx, cancel := context.WithTimeout(ctx, updateTimeout)
	defer cancel()
	if err := d.waitUpdated(wctx, base); err != nil {
		return err
	}
	fmt.Printf("\nNode %s runs %s and its daemon reports it up to date:\n", nodeName, base)
	d.kubectl(ctx, "get", "machineconfignodes", "-o", "wide")
	return nil
}

// annotate merges ann into the node's annotations.
func (d *demo) annotate(ctx context.Context, ann map[string]string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	_, err := d.bed.Kube.CoreV1().Nodes().Patch(ctx, nodeName, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// update sets the node's desiredConfig to config and prints the
// MachineConfigNode table each time it changes until the daemon reports
// Updated=True for config, or updateTimeout passes.
func (d *demo) update(ctx context.Context, config string) error {
	d.bootsBefore = d.node.Sys.Boots()
	d.reloadsBefore, _ = d.node.Sys.CRIOReloads()
	d.statusesBefore = d.log.Len()
	fmt.Printf("kubectl annotate node %s %sdesiredConfig=%s\n", d.node.Name, annotationPrefix, config)
	start := time.Now()
	if err := d.annotate(ctx, map[string]string{annotationPrefix + "desiredConfig": config}); err != nil {
		return fmt.Errorf("setting desiredConfig of %s: %w", d.node.Name, err)
	}
	wctx, cancel := context.WithTimeout(ctx, updateTimeout)
	defer cancel()
	pctx, stopPrinting := context.WithCancel(wctx)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		d.printTable(pctx, start)
	}()
	err := d.waitUpdated(wctx, config)
	d.took = time.Since(start)
	stopPrinting()
	<-printed
	if err != nil {
		return fmt.Errorf("update to %s: %w", config, err)
	}
	return nil
}

// printTable prints the wide MachineConfigNode table every time it changes
// (polled every 200 ms), and once more when ctx ends, if it changed.
func (d *demo) printTable(ctx context.Context, start time.Time) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last []byte
	show := func(c context.Context) {
		out, err := d.bed.Kubectl(c, "get", "machineconfignodes", "-o", "wide")
		if err != nil || bytes.Equal(withoutAge(out), last) {
			return
		}
		last = withoutAge(out)
		now := time.Now()
		fmt.Printf("--- %s (+%.1fs)\n%s", now.Format("15:04:05.000"), now.Sub(start).Seconds(), out)
	}
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			show(fctx)
			cancel()
			return
		case <-tick.C:
			show(ctx)
		}
	}
}

// withoutAge returns a kubectl table without its AGE column, which
// changes every second and would print the table as often while a node
// reboots.
func withoutAge(table []byte) []byte {
	lines := bytes.Split(table, []byte("\n"))
	start := bytes.Index(lines[0], []byte(" AGE "))
	if start < 0 {
		return table
	}
	start++
	end := start + len("AGE")
	for end < len(lines[0]) && lines[0][end] == ' ' {
		end++
	}
	for i, l := range lines {
		if len(l) >= end {
			lines[i] = append(l[:start:start], l[end:]...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// waitUpdated waits, on the status watch, until the node reports
// Updated=True at config.
func (d *demo) waitUpdated(ctx context.Context, config string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st := d.log.Latest()
		if c := d.log.Condition("Updated"); c != nil && c.Status == metav1.ConditionTrue &&
			st.ConfigVersion != nil && st.ConfigVersion.Current == config {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%v); latest status:\n%s", errTimeout, ctx.Err(), d.log.Describe())
		case <-tick.C:
		}
	}
}

// summary prints what the last update did to the node, and every change of
// a condition that the status watch saw (polling kubectl can miss some).
func (d *demo) summary() {
	fmt.Printf("Condition changes, in the order the watch saw them (%d status writes):\n  %s\n",
		d.log.Len()-d.statusesBefore, strings.Join(d.log.Transitions(d.statusesBefore), " → "))
	reloads, _ := d.node.Sys.CRIOReloads()
	node, err := d.bed.Kube.CoreV1().Nodes().Get(context.Background(), d.node.Name, metav1.GetOptions{})
	cordoned := "?"
	if err == nil {
		cordoned = fmt.Sprint(node.Spec.Unschedulable)
	}
	fmt.Printf("Updated=True after %.1fs: reboots %d, CRI-O reloads %d, node cordoned now: %s\n",
		d.took.Seconds(), d.node.Sys.Boots()-d.bootsBefore, reloads-d.reloadsBefore, cordoned)
}

// kubectl runs the bed's kubectl and prints its output (errors included).
func (d *demo) kubectl(ctx context.Context, args ...string) {
	fmt.Printf("$ kubectl %s\n", strings.Join(args, " "))
	out, err := d.bed.Kubectl(ctx, args...)
	os.Stdout.Write(out)
	if err != nil {
		fmt.Printf("(kubectl: %v)\n", err)
	}
}

// annotations prints the node's annotations, one per line.
func (d *demo) annotations(ctx context.Context) {
	args := []string{"get", "node", d.node.Name, "-o", "jsonpath={.metadata.annotations}"}
	fmt.Printf("$ kubectl %s\n", strings.Join(args, " "))
	out, err := d.bed.Kubectl(ctx, args...)
	var pretty bytes.Buffer
	if err != nil || json.Indent(&pretty, out, "", "  ") != nil {
		os.Stdout.Write(out)
		fmt.Println()
		return
	}
	fmt.Println(pretty.String())
}
