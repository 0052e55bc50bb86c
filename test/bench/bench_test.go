package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// quiet is how long the request counter must stand still for the daemon to
// count as done with what it was doing.
const quiet = time.Second

// BenchmarkUpdate1 times update 1 of the issue: the desired config differs
// from the current one in one file under /etc/containers/registries.d/, so
// the daemon writes it and reloads CRI-O (no drain, no reboot). Each
// iteration rolls out a new config (a unique name, a different line in
// that file) from the one the node runs, and measures from setting
// desiredConfig to the watch event that shows Updated=True at it.
// requests/update counts the daemon's API requests until it is quiet again
// (Events are sent in the background), for the costliest update: client-go's
// event spam filter drops an object's Events after a burst of 25, so later
// updates look cheaper than a real one; requests/update-mean averages them.
func BenchmarkUpdate1(b *testing.B) {
	n, _, trace := benchNode(b, "bench-u1")
	benchUpdates(b, n, trace, func(ctx context.Context, i int) string {
		name := fmt.Sprintf("rendered-bench-u1-%d", i)
		if err := bed.CreateConfig(ctx, registriesConfig(name, fmt.Sprintf("mirror-%d.example.com", i))); err != nil {
			b.Fatal(err)
		}
		return name
	})
}

// BenchmarkUpdateVerified is BenchmarkUpdate1 on a node that checks each
// desired config against its pool's MachineConfigs
// (--verify-rendered-configs, the default as shipped): the pool bench-v
// has ten fragments (a file each, as the controller merges them); each
// iteration changes one and hands the node the new render. Its
// requests/update and ms/update beside BenchmarkUpdate1's are the check's
// cost per update.
func BenchmarkUpdateVerified(b *testing.B) {
	const pool = "bench-v"
	if bed == nil {
		b.Skip("no test bed")
	}
	ctx := context.Background()
	createPool(ctx, b, pool)
	for i := range 10 {
		createFragment(ctx, b, fmt.Sprintf("9%d-%s-f", i, pool), pool, fmt.Sprintf("/etc/containers/registries.d/f%d.yaml", i),
			"docker:\n  start.example.com: {}\n")
	}
	n, _, trace := benchNodeWith(b, pool, testbed.NodeOptions{ExtraArgs: []string{"--pool", pool,
		"--verify-rendered-configs=true", "--allowed-config-pattern", "^rendered-{pool}-.+$"}})
	// The pool's first render, untimed: it writes the ten files.
	first := updateFragment(ctx, b, "90-"+pool+"-f", pool, registriesFile, "docker:\n  first.example.com: {}\n")
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w := watchMCN(fctx, b, n.Name)
	if err := n.SetDesired(fctx, first); err != nil {
		b.Fatal(err)
	}
	if _, err := waitUpdated(fctx, w, first); err != nil {
		b.Fatal(err)
	}
	benchUpdates(b, n, trace, func(ctx context.Context, i int) string {
		return updateFragment(ctx, b, "90-"+pool+"-f", pool, registriesFile, fmt.Sprintf("docker:\n  mirror-%d.example.com: {}\n", i))
	})
}

// benchUpdates times the updates to the configs next makes (the i-th from
// 1) on n, for BenchmarkUpdate1 and BenchmarkUpdateVerified.
func benchUpdates(b *testing.B, n *testbed.Node, trace *tracer, next func(ctx context.Context, i int) string) {
	ctx := context.Background()
	settle(ctx, b, n, quiet)
	var took time.Duration
	var reqs, maxReqs float64
	iters := 0
	for b.Loop() {
		b.StopTimer()
		iters++
		name := next(ctx, iters)
		ictx, cancel := context.WithTimeout(ctx, time.Minute)
		w := watchMCN(ictx, b, n.Name)
		before, mark := requests(b, n), trace.mark()
		b.StartTimer()

		start := time.Now()
		if err := n.SetDesired(ictx, name); err != nil {
			b.Fatal(err)
		}
		at, err := waitUpdated(ictx, w, name)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		took += at.Sub(start)
		after, _ := settle(ictx, b, n, quiet)
		reqs += after - before
		maxReqs = max(maxReqs, after-before)
		trace.log(fmt.Sprintf("update %d (%v)", iters, at.Sub(start).Round(time.Millisecond)), mark)
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(float64(took.Microseconds())/1000/float64(iters), "ms/update")
	b.ReportMetric(maxReqs, "requests/update")
	b.ReportMetric(reqs/float64(iters), "requests/update-mean")
}

// BenchmarkStartup restarts the daemon of an idle node that already runs
// its desired config and already reports Updated=True (as after a pod
// restart), and counts the API requests it makes until /healthz answers and
// its request counter has stood still for a second. requests/first-start
// is the daemon's very first start on the node (no MachineConfigNode yet),
// measured once.
func BenchmarkStartup(b *testing.B) {
	n, _, trace := benchNode(b, "bench-start")
	ctx := context.Background()
	first, _ := settle(ctx, b, n, quiet)
	trace.log("first start", 0)
	var reqs float64
	var took time.Duration
	iters := 0
	for b.Loop() {
		b.StopTimer()
		iters++
		if err := n.StopDaemon(); err != nil {
			b.Fatal(err)
		}
		mark := trace.mark()
		ictx, cancel := context.WithTimeout(ctx, time.Minute)
		b.StartTimer()

		start := time.Now()
		if err := n.StartDaemon(); err != nil {
			b.Fatal(err)
		}
		waitHealthy(ictx, b, n)
		count, last := settle(ictx, b, n, quiet)
		b.StopTimer()
		took += last.Sub(start)
		reqs += count // a new process counts from 0
		trace.log(fmt.Sprintf("restart %d", iters), mark)
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(reqs/float64(iters), "requests/startup")
	b.ReportMetric(float64(took.Microseconds())/1000/float64(iters), "ms/startup")
	b.ReportMetric(first, "requests/first-start")
}

// idleWindow is one iteration of BenchmarkIdle: -benchtime 5x watches the
// daemon for the minute.
const idleWindow = 12 * time.Second

// BenchmarkIdle watches the daemon of a node that runs its desired config
// and counts its API requests (scaled to a minute) and its resident memory
// (the largest VmRSS seen at the end of each window). The daemon looks for
// the reboot sentinel every second (the default is a minute): an idle pass
// of its loop must cost no request.
func BenchmarkIdle(b *testing.B) {
	n, _, trace := benchNodeWith(b, "bench-idle", testbed.NodeOptions{ExtraArgs: []string{"--reboot-check-interval", "1s"}})
	ctx := context.Background()
	settle(ctx, b, n, quiet)
	pid, err := daemonPID(n.Name)
	if err != nil {
		b.Fatal(err)
	}
	var reqs, maxRSS float64
	var mem map[string]float64
	var watched time.Duration
	for b.Loop() {
		before, mark := requests(b, n), trace.mark()
		start := time.Now()
		time.Sleep(idleWindow)
		watched += time.Since(start)
		reqs += requests(b, n) - before
		if mem, err = memoryMiB(pid); err != nil {
			b.Fatal(err)
		}
		maxRSS = max(maxRSS, mem["VmRSS"])
		if trace.mark() > mark {
			trace.log("idle window", mark)
		}
	}
	logMemStats(b, n, mem)
	for line := range strings.SplitSeq(n.DaemonLog(), "\n") {
		if strings.Contains(line, "released memory") {
			b.Log(line)
		}
	}
	b.ReportMetric(reqs*float64(time.Minute)/float64(watched), "requests/idle-minute")
	b.ReportMetric(maxRSS, "MiB-idle-RSS")
}

// logMemStats logs the Go runtime's view of the daemon's memory next to the
// kernel's (mem, from memoryMiB), to tell heap from binary pages.
func logMemStats(b *testing.B, n *testbed.Node, mem map[string]float64) {
	b.Helper()
	line := fmt.Sprintf("VmRSS %.1f MiB (RssAnon %.1f, RssFile %.1f); Go runtime:",
		mem["VmRSS"], mem["RssAnon"], mem["RssFile"])
	for _, m := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes",
		"go_memstats_heap_released_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes",
		"go_memstats_mspan_inuse_bytes", "go_memstats_other_sys_bytes", "go_goroutines"} {
		v, err := n.Metric(m)
		if err != nil {
			continue
		}
		if m == "go_goroutines" {
			line += fmt.Sprintf(" %s %.0f", m, v)
			continue
		}
		line += fmt.Sprintf(" %s %.1f MiB;", m, v/(1<<20))
	}
	b.Log(line)
}
