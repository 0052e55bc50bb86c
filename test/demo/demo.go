package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

const annotationPrefix = "machineconfiguration.openshift.io/"

// demo drives one node of a running bed.
type demo struct {
	bed  *testbed.Bed
	node *testbed.Node
	log  *testbed.StatusLog
	// bootsBefore and reloadsBefore are the node's counts when the last
	// update started.
	bootsBefore, reloadsBefore int
	// statusesBefore is how many statuses the watch had seen then.
	statusesBefore int
	took           time.Duration
}

// join registers the node at config base, as a freshly installed node runs
// it, and waits for the daemon to report it up to date. The status watch
// lives as long as ctx.
func (d *demo) join(ctx context.Context, base string) error {
	if err := d.node.Annotate(ctx, map[string]string{
		annotationPrefix + "currentConfig": base,
		annotationPrefix + "desiredConfig": base,
	}); err != nil {
		return fmt.Errorf("annotating node %s: %w", d.node.Name, err)
	}
	log, err := d.bed.RecordStatus(context.WithoutCancel(ctx), d.node.Name)
	if err != nil {
		return fmt.Errorf("watching the MachineConfigNode of %s: %w", d.node.Name, err)
	}
	d.log = log
	wctx, cancel := context.WithTimeout(ctx, updateTimeout)
	defer cancel()
	if err := d.waitUpdated(wctx, base); err != nil {
		return err
	}
	fmt.Printf("Node %s runs %s and its daemon reports it up to date:\n", d.node.Name, base)
	d.kubectl(ctx, "get", "machineconfignodes", "-o", "wide")
	return nil
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
	if err := d.node.SetDesired(ctx, config); err != nil {
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
		if err != nil || bytes.Equal(out, last) {
			return
		}
		last = out
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
