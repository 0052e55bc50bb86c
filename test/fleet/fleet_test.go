package fleet

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/nodeconfd/nodeconfd/daemon"
	"github.com/nodeconfd/nodeconfd/test/testbed"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// The fleet's size and timings: `make bench-fleet N=1000 S=10` sets them.
var (
	nodesFlag   = flag.Int("fleet.nodes", 20, "simulated nodes (N)")
	idleFlag    = flag.Duration("fleet.idle", 60*time.Second, "how long the idle fleet is measured")
	rebootFlag  = flag.Duration("fleet.reboot", 3*time.Second, "how long a simulated reboot keeps a daemon down")
	restartFlag = flag.Duration("fleet.restart-settle", 30*time.Second, "how long after an API server restart requests are counted (0: no restart)")
	timeoutFlag = flag.Duration("fleet.timeout", 50*time.Minute, "bound of the whole run")
	debugFlag   = flag.Bool("fleet.debug", false, "log the daemons at debug level (else warnings)")
	rollFlag    = flag.Bool("fleet.roll", true, "measure one node's update and the rolling update")
	apiProfFlag = flag.String("fleet.apiserver-profile", "", "write a CPU profile of kube-apiserver over the roll's first 30 s here")
	traceFlag   = flag.Bool("fleet.trace-status", false, "print the first node's status writes")
	jitterFlag  = flag.Duration("fleet.start-jitter", daemon.DefaultStartJitter, "the daemons' --start-jitter")
	spreadFlag  = flag.Duration("fleet.update-spread", daemon.DefaultUpdateSpread, "the daemons' --update-spread")
	niceFlag    = flag.Int("fleet.control-plane-nice", -10, "the nice value of kube-apiserver and etcd (0: as started): the simulated daemons share their cores")
	maxUnavFlag = flag.Int("fleet.max-unavailable", 10, "the worker pool's maxUnavailable (S): the controller hands the roll's config to at most S nodes at a time")
	apfFlag     = flag.Bool("fleet.apf", false, "run kube-apiserver with API Priority and Fairness, as real clusters do (the test bed runs without)")
)

// bed is the benchmark's test bed; nil when no benchmark runs.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	testbed.MainWith(m, "nodeconfd-fleet-", func() bool {
		flag.Parse()
		f := flag.Lookup("test.bench")
		return f != nil && f.Value.String() != ""
	}, func() controlplane.Options {
		return controlplane.Options{PriorityAndFairness: *apfFlag, Nice: *niceFlag}
	}, func(b *testbed.Bed) { bed = b })
}

// BenchmarkFleet runs the fleet once per iteration (run it with
// -benchtime 1x): start-up storm, idle, one node's update, a rolling
// update of every node paced by `nodeconfd controller` (the worker pool's
// maxUnavailable), and an API server restart. It
// prints a table per measurement and reports the headline figures.
func BenchmarkFleet(b *testing.B) {
	if bed == nil {
		b.Skip("no test bed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeoutFlag)
	defer cancel()
	for i := 0; i < b.N; i++ {
		fig := runFleet(ctx, b, fmt.Sprintf("r%d", i))
		b.ReportMetric(fig.IdleRequestsPerSecond, "idle-req/s")
		b.ReportMetric(fig.Watches/float64(*nodesFlag), "watches/node")
		b.ReportMetric(fig.StartupSeconds, "startup-s")
		b.ReportMetric(fig.SingleUpdateSeconds, "single-update-s")
		b.ReportMetric(fig.RollSeconds, "roll-s")
		b.ReportMetric(fig.RollSeconds/fig.RollBound, "roll/bound")
		b.ReportMetric(fig.RequestsPerNode, "req/node")
		b.ReportMetric(fig.StatusWritesPerNode, "status-writes/node")
		b.ReportMetric(fig.P99, "p99-s")
		b.ReportMetric(fig.RequestsPerHandoff, "req/handoff")
		b.ReportMetric(fig.ControllerCPUSeconds, "controller-cpu-s")
		b.ReportMetric(fig.ControllerPeakRSS/(1<<20), "controller-peak-MiB")
	}
}

func runFleet(ctx context.Context, b *testing.B, run string) Figures {
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("nodeconfd-fleet-%d-daemons-%s.log", *nodesFlag, run))
	daemonLog, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer daemonLog.Close()
	opts := Options{Nodes: *nodesFlag, RebootTime: *rebootFlag,
		StartJitter: *jitterFlag, UpdateSpread: *spreadFlag,
		Log: os.Stdout, DaemonLog: daemonLog, DaemonLogLevel: zapcore.WarnLevel}
	opts.APIServerProfile = *apiProfFlag
	if *traceFlag {
		opts.TraceStatus = os.Stdout
	}
	if *debugFlag {
		opts.DaemonLogLevel = zapcore.DebugLevel
	}
	start := time.Now()
	// The controller first: the nodes register on the pool's first
	// rendered config (pool.go).
	p, base, err := startPool(ctx, bed, run, *maxUnavFlag)
	if err != nil {
		b.Fatal(err)
	}
	defer p.stop()
	f, err := New(ctx, bed, opts, base)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Stop()
	go f.metrics.samplePeak(ctx)
	fmt.Printf("\n## Fleet of %d nodes, pool %s at maxUnavailable %d (set up in %s; daemons' warnings in %s; "+
		"the controller's log in %s)\n", opts.Nodes, poolName, *maxUnavFlag, time.Since(start).Round(time.Second), logPath, bed.Dir)
	var fig Figures
	steps := []func() (*Table, error){
		func() (*Table, error) { return f.Startup(ctx, base, &fig) },
		func() (*Table, error) { time.Sleep(5 * time.Second); return f.Idle(ctx, *idleFlag, &fig) },
	}
	if *rollFlag {
		steps = append(steps,
			func() (*Table, error) {
				// Paused: the controller would hand node 0 the pool's
				// config back (Rolling resumes it).
				if err := p.setPaused(ctx, true); err != nil {
					return nil, err
				}
				return f.Single(ctx, "rendered-worker-fleet-"+run+"-one", &fig)
			},
			func() (*Table, error) { return f.Rolling(ctx, p, base, *maxUnavFlag, &fig) })
	}
	steps = append(steps, func() (*Table, error) { return f.Redeploy(ctx, 10*time.Second) })
	if *restartFlag > 0 {
		steps = append(steps, func() (*Table, error) { time.Sleep(5 * time.Second); return f.Restart(ctx, *restartFlag, &fig) })
	}
	for _, step := range steps {
		t, err := step()
		if err != nil {
			b.Fatal(err)
		}
		t.Print(os.Stdout)
	}
	return fig
}
