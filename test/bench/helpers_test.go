package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

const (
	requestsMetric = "nodeconfd_api_requests_total"
	registriesFile = "/etc/containers/registries.d/bench.yaml"
)

// ignition builds an Ignition 3.4 config (see testbed.Ignition).
func ignition(files map[string]string) string { return testbed.Ignition(files) }

// registriesConfig is a rendered config whose only file is registriesFile,
// with a line that tells configs apart.
func registriesConfig(name, line string) *mcfgv1.MachineConfig {
	return testbed.MachineConfig(name, ignition(map[string]string{registriesFile: "docker:\n  " + line + ": {}\n"}))
}

// benchNode starts node name running config base (created here, empty), annotated
// current=desired=base, then starts its daemon (so its first start is at
// that config) and waits until it reports Updated=True. It stops the node
// when the benchmark ends. A reboot does not restart this daemon. The tracer is nil unless
// NODECONFD_BENCH_TRACE is set.
func benchNode(b *testing.B, name string) (*testbed.Node, string, *tracer) {
	b.Helper()
	return benchNodeWith(b, name, testbed.NodeOptions{})
}

// benchNodeWith is benchNode with opts for the node (NoDaemon is set).
func benchNodeWith(b *testing.B, name string, opts testbed.NodeOptions) (*testbed.Node, string, *tracer) {
	b.Helper()
	if bed == nil {
		b.Skip("no test bed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := "rendered-" + name + "-base"
	// The base has nothing the node lacks, so the node runs it (no drift).
	if err := bed.CreateConfig(ctx, testbed.MachineConfig(base, ignition(nil))); err != nil {
		b.Fatal(err)
	}
	args, trace := traceArgs(b, name)
	opts.ExtraArgs, opts.NoDaemon = append(opts.ExtraArgs, args...), true
	n := bed.AddTestNode(ctx, b, name, base, opts)
	w := watchMCN(ctx, b, name)
	if err := n.StartDaemon(); err != nil {
		b.Fatal(err)
	}
	if _, err := waitUpdated(ctx, w, base); err != nil {
		b.Fatal(err)
	}
	return n, base, trace
}

// watchMCN watches node's MachineConfigNode until ctx ends. The first event
// is the object as it is now.
func watchMCN(ctx context.Context, b *testing.B, node string) watch.Interface {
	b.Helper()
	w, err := bed.MCfg.MachineconfigurationV1().MachineConfigNodes().Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", node).String(),
	})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// waitUpdated reads the watch until the node reports Updated=True
// (NodeUpgradeComplete) at config, and returns when that event arrived.
func waitUpdated(ctx context.Context, w watch.Interface, config string) (time.Time, error) {
	defer w.Stop()
	last := "no status yet"
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("waiting for Updated=True at %s: %w; last status: %s", config, ctx.Err(), last)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return time.Time{}, fmt.Errorf("waiting for Updated=True at %s: watch closed; last status: %s", config, last)
			}
			mcn, isMCN := ev.Object.(*mcfgv1.MachineConfigNode)
			if !isMCN {
				continue
			}
			at := time.Now()
			last = describe(mcn.Status)
			if updatedAt(mcn.Status, config) {
				return at, nil
			}
		}
	}
}

func updatedAt(st mcfgv1.MachineConfigNodeStatus, config string) bool {
	if st.ConfigVersion == nil || st.ConfigVersion.Current != config {
		return false
	}
	for _, c := range st.Conditions {
		if c.Type == "Updated" {
			return c.Status == metav1.ConditionTrue && c.Reason == "NodeUpgradeComplete"
		}
	}
	return false
}

func describe(st mcfgv1.MachineConfigNodeStatus) string {
	var parts []string
	for _, c := range st.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	if cv := st.ConfigVersion; cv != nil {
		parts = append(parts, "current="+cv.Current, "desired="+cv.Desired)
	}
	return strings.Join(parts, " ")
}

// requests reads the daemon's API request counter.
func requests(b *testing.B, n *testbed.Node) float64 {
	b.Helper()
	v, err := n.Metric(requestsMetric)
	if errors.Is(err, testbed.ErrNoSeries) {
		return 0 // a new process, its metrics served before its first request
	}
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// settle waits until the daemon's request counter has not changed for
// quiet, and returns its value and when it last changed.
func settle(ctx context.Context, b *testing.B, n *testbed.Node, quiet time.Duration) (float64, time.Time) {
	b.Helper()
	last, since := requests(b, n), time.Now()
	for time.Since(since) < quiet {
		select {
		case <-ctx.Done():
			b.Fatalf("waiting for the daemon's requests to stop: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if v := requests(b, n); v != last {
			last, since = v, time.Now()
		}
	}
	return last, since
}

// waitHealthy waits until the daemon's /healthz answers.
func waitHealthy(ctx context.Context, b *testing.B, n *testbed.Node) {
	b.Helper()
	for {
		resp, err := http.Get("http://" + n.MetricsAddr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			b.Fatalf("waiting for /healthz of %s: %v (last error %v)", n.Name, ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// daemonPID finds the daemon process of node by its command line.
func daemonPID(node string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("listing /proc: %w", err)
	}
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if len(args) > 3 && strings.HasSuffix(args[0], "nodeconfd") && args[1] == "start" &&
			args[2] == "--node-name" && args[3] == node {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no daemon process for node %s", node)
}

// memoryMiB reads a process's memory figures (VmRSS, RssAnon, RssFile, ...)
// from /proc/<pid>/status, in MiB by field name.
func memoryMiB(pid int) (map[string]float64, error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(data), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasSuffix(rest, " kB") || !(strings.HasPrefix(name, "Vm") || strings.HasPrefix(name, "Rss")) {
			continue
		}
		var kb float64
		if _, err := fmt.Sscan(rest, &kb); err != nil {
			return nil, fmt.Errorf("parsing %q of %s: %w", line, path, err)
		}
		out[name] = kb / 1024
	}
	if _, ok := out["VmRSS"]; !ok {
		return nil, fmt.Errorf("no VmRSS in %s", path)
	}
	return out, nil
}

// daemonConfig is the daemon's client config on node: a token bound to its
// pod there, which the admission policies require of every write.
func daemonConfig(ctx context.Context, b *testing.B, node string) *rest.Config {
	b.Helper()
	pod, err := bed.DaemonPod(ctx, node)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := bed.CP.RestConfigForPod(ctx, pod)
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}
