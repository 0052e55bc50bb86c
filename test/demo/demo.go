package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// demo drives the real nodes of a cluster bed as an administrator would:
// kubectl apply, kubectl label, kubectl get.
type demo struct {
	bed   *testbed.Bed
	dir   string // where the manifests it applies are written
	nodes map[string]*testbed.KubeNode
	// boots and reloads are the nodes' counts when the last step started.
	boots, reloads map[string]int
}

// boot starts the nodes at once and waits for their kubelets to register
// them: fresh nodes, with no config, as on a cluster nodeconfd was just
// installed on. One is set aside for the controller's pods.
func (d *demo) boot(ctx context.Context) error {
	d.nodes = map[string]*testbed.KubeNode{}
	var mu sync.Mutex
	errs := make(chan error, len(nodeNames))
	var wg sync.WaitGroup
	for _, name := range nodeNames {
		wg.Go(func() {
			n, err := d.bed.AddKubeNode(ctx, name)
			if err != nil {
				errs <- fmt.Errorf("adding node %s: %w", name, err)
				return
			}
			mu.Lock()
			d.nodes[name] = n
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	// The controller's Deployment runs only on control-plane nodes or on nodes set aside for it:
	// the demo's cluster has no control-plane node, so one node is set aside.
	d.show(fmt.Sprintf("kubectl label node %s %s=", nodeNames[0], testbed.ControllerNodeLabel))
	return d.bed.LabelControllerNode(ctx, nodeNames[0])
}

// stop powers the nodes off.
func (d *demo) stop(ctx context.Context) {
	for _, n := range d.nodes {
		if err := n.Stop(ctx); err != nil {
			fmt.Println(err)
		}
	}
}

// join waits for the DaemonSet's pods and the controller's to run.
func (d *demo) join(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := d.bed.Kube.AppsV1().DaemonSets(testbed.Namespace).Get(ctx, testbed.DaemonSetName, metav1.GetOptions{})
		if err != nil || ds.Status.CurrentNumberScheduled != int32(len(nodeNames)) {
			return false, nil
		}
		dep, err := d.bed.Kube.AppsV1().Deployments(testbed.Namespace).Get(ctx, testbed.ControllerName, metav1.GetOptions{})
		return err == nil && dep.Status.ReadyReplicas == 2, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the DaemonSet's pods and the controller: %w", err)
	}
	d.kubectl(ctx, "get", "nodes", "-o", "wide")
	fmt.Printf("\nThe DaemonSet and the controller as shipped (the release manifest), running the image built here,\n"+
		"pushed to the bed's registry and pulled by the node (%s@%s):\n", d.bed.Images().DaemonRef, d.bed.Images().DaemonDigest)
	d.kubectl(ctx, "get", "daemonsets,deployments,pods", "-n", testbed.Namespace, "-o", "wide")
	fmt.Println("\nThe shipped pools: master takes control-plane nodes, worker every other node; no config yet.")
	d.kubectl(ctx, "get", "machineconfigpools")
	return nil
}

// apply writes a manifest as the administrator's file, shows it and
// applies it with kubectl.
func (d *demo) apply(ctx context.Context, f fragment) error {
	path := filepath.Join(d.dir, f.file)
	if err := os.WriteFile(path, []byte(f.yaml), 0o644); err != nil {
		return err
	}
	fmt.Printf("$ cat %s\n%s", f.file, f.yaml)
	d.show("kubectl apply -f " + f.file)
	out, err := d.bed.Kubectl(ctx, "apply", "-f", path)
	os.Stdout.Write(out)
	if err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w", f.file, err)
	}
	return nil
}

// label labels a node, as `kubectl label node` does.
func (d *demo) label(ctx context.Context, node, key string) error {
	d.show(fmt.Sprintf("kubectl label node %s %s=", node, key))
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:""}}}`, key)
	_, err := d.bed.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// poolGoal is a pool that must end with n nodes on a rendered config made
// with fragment.
type poolGoal struct {
	pool     string
	nodes    int32
	fragment string
}

// rollOut prints the pools and the MachineConfigNodes each time either
// table changes (polled every 200 ms) until every goal is met, or
// rolloutTimeout passes.
func (d *demo) rollOut(ctx context.Context, goals ...poolGoal) error {
	d.boots, d.reloads = map[string]int{}, map[string]int{}
	for name, n := range d.nodes {
		d.boots[name] = n.Sys.Boots()
		d.reloads[name], _ = n.Sys.CRIOReloads()
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, rolloutTimeout)
	defer cancel()
	var last []byte
	for {
		done, why := d.met(ctx, goals)
		var tables bytes.Buffer
		for _, args := range [][]string{{"get", "machineconfigpools"}, {"get", "machineconfignodes", "-o", "wide"}} {
			out, _ := d.bed.Kubectl(ctx, args...)
			tables.Write(withoutAge(out))
		}
		if !bytes.Equal(tables.Bytes(), last) || done {
			last = tables.Bytes()
			now := time.Now()
			fmt.Printf("--- %s (+%.1fs)\n%s", now.Format("15:04:05.000"), now.Sub(start).Seconds(), last)
		}
		if done {
			d.summary(time.Since(start))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w after %s: %s", errTimeout, rolloutTimeout, why)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// met says whether every goal is met, or why not.
func (d *demo) met(ctx context.Context, goals []poolGoal) (bool, string) {
	for _, g := range goals {
		p, err := d.bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, g.pool, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if !slices.ContainsFunc(p.Spec.Configuration.Source, func(r corev1.ObjectReference) bool { return r.Name == g.fragment }) {
			return false, fmt.Sprintf("pool %s not rendered with %s yet", g.pool, g.fragment)
		}
		st := p.Status
		if !updated(st) || st.MachineCount != g.nodes || st.UpdatedMachineCount != g.nodes ||
			st.Configuration.Name != p.Spec.Configuration.Name {
			return false, fmt.Sprintf("pool %s: %d of %d nodes updated to %s", g.pool, st.UpdatedMachineCount, g.nodes,
				p.Spec.Configuration.Name)
		}
	}
	return true, ""
}

func updated(st mcfgv1.MachineConfigPoolStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == mcfgv1.MachineConfigPoolUpdated {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// summary prints what the last step did to each node.
func (d *demo) summary(took time.Duration) {
	fmt.Printf("Done after %.1fs:\n", took.Seconds())
	for _, name := range nodeNames {
		n := d.nodes[name]
		reloads, _ := n.Sys.CRIOReloads()
		fmt.Printf("  %s: reboots %d, CRI-O reloads %d\n", name, n.Sys.Boots()-d.boots[name], reloads-d.reloads[name])
	}
}

// withoutAge returns a kubectl table without its AGE column, which
// changes every second and would print the table as often while a node
// reboots.
func withoutAge(table []byte) []byte {
	lines := bytes.Split(table, []byte("\n"))
	head := lines[0]
	start := bytes.Index(append(head[:len(head):len(head)], ' '), []byte(" AGE "))
	if start < 0 {
		return table
	}
	start++
	end := start + len("AGE")
	for end < len(head) && head[end] == ' ' {
		end++
	}
	last := end >= len(head)
	if last { // the last column: cut the spaces before it too
		for start > 0 && head[start-1] == ' ' {
			start--
		}
	}
	for i, l := range lines {
		switch {
		case last && len(l) > start:
			lines[i] = bytes.TrimRight(l[:start], " ")
		case !last && len(l) >= end:
			lines[i] = append(l[:start:start], l[end:]...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// show prints a command the administrator types.
func (d *demo) show(cmd string) { fmt.Println("$ " + cmd) }

// kubectl runs the bed's kubectl and prints its output (errors included).
func (d *demo) kubectl(ctx context.Context, args ...string) {
	d.show("kubectl " + strings.Join(args, " "))
	out, err := d.bed.Kubectl(ctx, args...)
	os.Stdout.Write(out)
	if err != nil {
		fmt.Printf("(kubectl: %v)\n", err)
	}
}
