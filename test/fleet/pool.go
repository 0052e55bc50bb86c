package fleet

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// The pool the fleet's nodes belong to: the shipped worker pool
// (manifests/06-pools.yaml; the simulated nodes carry its
// node-role.kubernetes.io/worker label), one worker MachineConfig of the
// benchmark's (a fragment) and `nodeconfd controller` run from the built
// binary as a process of its own, so that its CPU time and memory are read
// from /proc apart from the benchmark process's N daemons.

const (
	// poolName is the shipped pool the fleet's nodes are workers of.
	poolName = "worker"
	// roleLabel selects a MachineConfig into the worker pool.
	roleLabel = "machineconfiguration.openshift.io/role"
	// ctlHost is the Node the controller's pod is bound to (its token's
	// node claim needs one); no pool selects it.
	ctlHost = "fleet-controller-host"
	// handedLine is what the controller logs at each handoff.
	handedLine = "Handed a node the pool's config"
)

// pool is the worker pool under the controller.
type pool struct {
	bed      *testbed.Bed
	ctl      *testbed.Controller
	fragment string
}

// startPool sets the worker pool's maxUnavailable, creates the fragment
// at content v0, starts the controller and waits for the pool's first
// rendered config, which it returns: the nodes are registered on it, so
// that the controller has nothing to hand out before the roll.
func startPool(ctx context.Context, bed *testbed.Bed, run string, maxUnavailable int) (*pool, string, error) {
	p := &pool{bed: bed, fragment: "50-worker-fleet-" + run}
	if err := p.patch(ctx, fmt.Sprintf(`{"spec":{"maxUnavailable":%d,"paused":false}}`, maxUnavailable), ""); err != nil {
		return nil, "", err
	}
	if err := p.setFragment(ctx, "v0"); err != nil {
		return nil, "", err
	}
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ctlHost, // a control plane: not in the worker pool
		Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}
	if _, err := bed.Kube.CoreV1().Nodes().Create(ctx, host, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, "", fmt.Errorf("registering the controller's node: %w", err)
	}
	var err error
	p.ctl, err = bed.StartController(ctx, "fleet-controller-"+run, ctlHost, "--leader-elect=false", "--log-format", "json")
	if err != nil {
		return nil, "", err
	}
	base, err := p.rendered(ctx, "")
	if err != nil {
		p.ctl.Stop()
		return nil, "", err
	}
	return p, base, nil
}

// stop stops the controller (SIGTERM).
func (p *pool) stop() { p.ctl.Stop() }

// setFragment creates or replaces the fragment: at v0 empty (the
// simulated hosts start empty: a file of the nodes' first config would be
// drift), else one file whose content is v (a change the daemons apply
// with a drain and a reboot, the policy's default for a file outside its
// list).
func (p *pool) setFragment(ctx context.Context, v string) error {
	var files map[string]string
	if v != "v0" {
		files = map[string]string{"/etc/fleet/fragment.conf": "fragment " + v + "\n"}
	}
	mc := testbed.MachineConfig(p.fragment, testbed.Ignition(files))
	mc.Labels = map[string]string{roleLabel: poolName}
	mcs := p.bed.MCfg.MachineconfigurationV1().MachineConfigs()
	old, err := mcs.Get(ctx, p.fragment, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = mcs.Create(ctx, mc, metav1.CreateOptions{})
	case err == nil:
		mc.ResourceVersion = old.ResourceVersion
		_, err = mcs.Update(ctx, mc, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing MachineConfig %s at %s: %w", p.fragment, v, err)
	}
	return nil
}

// setPaused pauses or resumes the pool.
func (p *pool) setPaused(ctx context.Context, paused bool) error {
	return p.patch(ctx, fmt.Sprintf(`{"spec":{"paused":%t}}`, paused), "")
}

func (p *pool) patch(ctx context.Context, patch, sub string) error {
	var subs []string
	if sub != "" {
		subs = append(subs, sub)
	}
	if _, err := p.bed.MCfg.MachineconfigurationV1().MachineConfigPools().Patch(ctx, poolName, types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{}, subs...); err != nil {
		return fmt.Errorf("patching MachineConfigPool %s with %s: %w", poolName, patch, err)
	}
	return nil
}

// get reads the pool.
func (p *pool) get(ctx context.Context) (*mcfgv1.MachineConfigPool, error) {
	mcp, err := p.bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, poolName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading MachineConfigPool %s: %w", poolName, err)
	}
	return mcp, nil
}

// rendered waits until the pool's configuration is a rendered config
// other than not, and returns its name.
func (p *pool) rendered(ctx context.Context, not string) (string, error) {
	var name string
	err := p.poll(ctx, 100*time.Millisecond, "a rendered config other than "+not, func(mcp *mcfgv1.MachineConfigPool) bool {
		name = mcp.Spec.Configuration.Name
		return strings.HasPrefix(name, "rendered-"+poolName+"-") && name != not
	})
	return name, err
}

// updated waits until the pool's status says Updated at target with all
// n machines updated. It returns the highest unavailableMachineCount seen
// on the way (a sample a second) and, if that passed maxUnavailable, the
// pool's conditions at the first such sample (their messages name the
// unavailable nodes and why).
func (p *pool) updated(ctx context.Context, target string, n, maxUnavailable int) (int32, string, error) {
	var most int32
	var over string
	err := p.poll(ctx, time.Second, fmt.Sprintf("Updated at %s with %d machines", target, n), func(mcp *mcfgv1.MachineConfigPool) bool {
		most = max(most, mcp.Status.UnavailableMachineCount)
		if over == "" && mcp.Status.UnavailableMachineCount > int32(maxUnavailable) {
			for _, c := range mcp.Status.Conditions {
				over += fmt.Sprintf("%s=%s: %s; ", c.Type, c.Status, c.Message)
			}
		}
		for _, c := range mcp.Status.Conditions {
			if c.Type == mcfgv1.MachineConfigPoolUpdated {
				return c.Status == corev1.ConditionTrue && mcp.Status.Configuration.Name == target &&
					mcp.Status.UpdatedMachineCount == int32(n) && mcp.Status.MachineCount == int32(n)
			}
		}
		return false
	})
	return most, over, err
}

// poll reads the pool every interval until ok says so.
func (p *pool) poll(ctx context.Context, interval time.Duration, what string, ok func(*mcfgv1.MachineConfigPool) bool) error {
	for {
		mcp, err := p.get(ctx)
		if err == nil && ok(mcp) {
			return nil
		}
		select {
		case <-ctx.Done():
			if mcp != nil {
				return fmt.Errorf("waiting for pool %s: %s (status: %d machines, %d updated, %d unavailable, at %q): %w",
					poolName, what, mcp.Status.MachineCount, mcp.Status.UpdatedMachineCount,
					mcp.Status.UnavailableMachineCount, mcp.Status.Configuration.Name, ctx.Err())
			}
			return fmt.Errorf("waiting for pool %s: %s: %w", poolName, what, errorOr(err, ctx.Err()))
		case <-time.After(interval):
		}
	}
}

func errorOr(err, or error) error {
	if err != nil {
		return err
	}
	return or
}

// ctlStats is the controller process's CPU time (user+system) and memory.
type ctlStats struct {
	cpu      time.Duration
	rss, hwm int64
}

// stats reads the controller's /proc.
func (p *pool) stats() ctlStats {
	pid := p.ctl.PID()
	cpu, rss := procStats(pid) // metrics.go
	return ctlStats{cpu: cpu, rss: rss, hwm: statusField(pid, "VmHWM:")}
}

// resetPeak resets the controller's peak RSS (VmHWM), so that the next
// read is the peak since now (the kernel's clear_refs 5).
func (p *pool) resetPeak() error {
	pid := p.ctl.PID()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting the controller's peak RSS: %w", err)
	}
	return nil
}

// handoffs counts the handoffs of config in the controller's log.
func (p *pool) handoffs(config string) int {
	n := 0
	for _, l := range strings.Split(p.ctl.Log(), "\n") {
		if strings.Contains(l, handedLine) && strings.Contains(l, `"config":"`+config+`"`) {
			n++
		}
	}
	return n
}

// handoffsTo is the controller's handoff log lines of the fleet nodes
// text names.
func (p *pool) handoffsTo(text string) string {
	named := map[string]bool{}
	for _, n := range fleetNodeName.FindAllString(text, -1) {
		named[`"node":"`+n+`"`] = true
	}
	var b strings.Builder
	for _, l := range strings.Split(p.ctl.Log(), "\n") {
		if !strings.Contains(l, handedLine) {
			continue
		}
		for n := range named {
			if strings.Contains(l, n) {
				b.WriteString("\n      " + l)
				break
			}
		}
	}
	return b.String()
}

// statusField reads a "kB" field of /proc/pid/status in bytes.
func statusField(pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
