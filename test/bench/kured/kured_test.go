package kured

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// The nodes: three that are asked to reboot, and one set aside for the
// nodeconfd controller's replicas (testbed.ControllerNodeLabel), as a
// control-plane node would hold them; it runs both daemons too, with no
// sentinel.
var (
	rebooted   = []string{"kr-a", "kr-b", "kr-c"}
	controller = "kr-ctl"
)

// sentinel is the file both tools watch (kured's default
// /var/run/reboot-required, /var/run being /run; nodeconfd's default).
const sentinel = "/run/reboot-required"

// BenchmarkRebootVsKured writes the reboot-required sentinel on three
// real nodes at once and measures, for nodeconfd's reboot on request and
// then for kured on the same nodes, the time until the last of them is
// back in service (rebooted, Ready, uncordoned), each one node at a time.
// It reports both (seconds) and logs each node's steps.
func BenchmarkRebootVsKured(b *testing.B) {
	if bed == nil {
		b.Skip("no test bed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	defer cancel()
	all := append([]string{controller}, rebooted...)
	kuredImage := buildKured(ctx, b)
	// Both tools look every 10 s; the daemons start with it.
	daemonArgs(ctx, b, "--reboot-check-interval="+period)
	fragment(ctx, b)
	nodes := startNodes(ctx, b, all...)
	if err := bed.LabelControllerNode(ctx, controller); err != nil {
		b.Fatal(err)
	}
	controllerReady(ctx, b)
	settled(ctx, b, all)
	replicas := int32(2 * len(all))
	startWorkload(ctx, b, replicas)
	subject := map[string]*testbed.KubeNode{}
	for _, name := range rebooted {
		subject[name] = nodes[name]
	}

	for b.Loop() {
		var tl *timeline
		// NODECONFD_KURED_CONTROL=1 measures nodeconfd twice: the second
		// is a node's third boot, as kured's is.
		for range 1 + min(len(os.Getenv("NODECONFD_KURED_CONTROL")), 1) {
			tl = measure(ctx, b, subject)
			settled(ctx, b, all)
			b.Logf("nodeconfd, reboot on request: last node back in service %s after the sentinels; most nodes out at once: %d\n%s",
				sec(tl.last()), tl.most, tl.table())
			workloadAvailable(ctx, b, replicas)
		}
		b.ReportMetric(tl.last().Seconds(), "s-nodeconfd")

		// kured alone runs on the nodes now, as nodeconfd's daemons alone
		// did: each node's pods at its reboot are the same in number (on
		// this bed each costs the kubelet's start: docs/kured.md).
		daemonsOff(ctx, b)
		if err := installKured(ctx, kuredImage); err != nil {
			b.Fatal(err)
		}
		waitDaemonSet(ctx, b, kuredNamespace, kuredName, 1, int32(len(all)))
		kuredSteady(ctx, b, all)
		tl = measure(ctx, b, subject)
		kuredUnlocked(ctx, b)
		b.ReportMetric(tl.last().Seconds(), "s-kured")
		b.Logf("kured %s: last node back in service %s after the sentinels; most nodes out at once: %d\n%s",
			kuredImage, sec(tl.last()), tl.most, tl.table())
		if tl.most != 1 {
			b.Logf("kured's logs:\n%s", kuredLogs(ctx))
		}
	}
}

// measure writes the sentinel on every node at once and follows them
// until each is back in service after one reboot.
func measure(ctx context.Context, b *testing.B, nodes map[string]*testbed.KubeNode) *timeline {
	b.Helper()
	tl := newTimeline(nodes)
	before := loadavg()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		wg.Go(func() {
			_, err := n.Sys.Exec(ctx, "touch", sentinel)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 12*time.Minute)
	defer cancel()
	if err := tl.run(wctx, start); err != nil {
		b.Fatal(err)
	}
	// The machine is shared: its load says what else ran meanwhile.
	b.Logf("load average (1, 5, 15 min) at the sentinels: %s; at the last node back: %s", before, loadavg())
	for name, n := range nodes {
		if got := n.Sys.Boots() - tl.boots[name]; got != 1 {
			b.Errorf("node %s rebooted %d times, want once", name, got)
		}
	}
	if tl.most != 1 {
		b.Errorf("%d nodes were out of service at once, want 1", tl.most)
	}
	for name, n := range nodes {
		b.Logf("node %s's boot:\n%s", name, bootLog(ctx, n))
	}
	return tl
}

// bootLog is what the node's systemd, containerd and kubelet logged of
// the boot's steps that come before the kubelet's first status: where a
// boot's time goes.
func bootLog(ctx context.Context, n *testbed.KubeNode) string {
	out, err := n.Sys.Exec(ctx, "sh", "-c", "systemd-analyze 2>&1 | head -n1; "+
		"journalctl -b --no-pager -o short-precise | grep -E "+
		"'Startup finished|Started (containerd|kubelet)|Starting (containerd|kubelet)|became ready|"+
		"Successfully registered node|Attempting to register|Unable to register|kubelet\\[[0-9]+\\]: E[0-9]' | "+
		"cut -c1-300 | head -n 30")
	if err != nil {
		return err.Error()
	}
	return string(out)
}

// loadavg is the host's load averages, "?" when unreadable.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// fragment applies the worker pool's one MachineConfig (a registries.d
// file: written without a drain or a reboot), so that the pool has a
// rendered config and each node runs it: the controller grants reboots to
// nodes that run their pool's config.
func fragment(ctx context.Context, b *testing.B) {
	b.Helper()
	mc := testbed.MachineConfig("99-worker-kured",
		testbed.Ignition(map[string]string{"/etc/containers/registries.d/kured.yaml": "docker:\n  kured.example: {}\n"}))
	mc.Labels = map[string]string{"machineconfiguration.openshift.io/role": "worker"}
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}
