package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

const (
	// idleGap is how long the daemon idles, unwatched, after settling and
	// before BenchmarkIdleWorkingSet reads its memory.
	idleGap = 10 * time.Second
	// longIdle is the last, longer idle: the Go runtime's scavenger
	// returns unused heap by itself over minutes.
	longIdle     = 2 * time.Minute
	releasedLine = "released memory"
	// squeezeRoom is what the squeezed reading leaves the daemon above its
	// anonymous memory: the same pressure for both variants.
	squeezeRoom = 6 << 20
)

// BenchmarkIdleWorkingSet measures what the kubelet and `kubectl top`
// count for the daemon, the working set of its container's cgroup
// (testbed.CgroupMemory.WorkingSet), with the idle memory release
// (--release-memory-when-idle) on and off. The daemon of a node that runs
// its desired config runs in a cgroup of its own from its own copy of the
// binary, as in its pod. Its memory is read idleGap after it settles at
// start and after each iteration's rebootless update (a file under
// /etc/containers/registries.d/, as BenchmarkUpdate1), and once more after
// longIdle, once more after one scrape of its /metrics, and last under a
// memory limit at its anonymous memory plus squeezeRoom (pressure); the
// table of every reading is logged (with one more right after the first
// settle).
//
// The working set leaves out the inactive page cache: the executable's
// pages the daemon maps stay on the inactive list (the kernel promotes a
// page only when reclaim finds it referenced), so they are in
// memory.current and VmRSS but not in the working set. (The release once
// also reclaimed them with MADV_PAGEOUT; what the daemon touched again
// came back as a refault, which the kernel puts straight on the active
// list, and the working set grew by 16 MiB: this benchmark is why it went.
// The release now returns only the free heap.)
func BenchmarkIdleWorkingSet(b *testing.B) {
	for _, release := range []bool{true, false} {
		b.Run(fmt.Sprintf("release=%v", release), func(b *testing.B) { idleWorkingSet(b, release) })
	}
}

// memReading is the daemon's memory at one point, in MiB.
type memReading struct {
	label string
	cg    testbed.CgroupMemory
	proc  map[string]float64 // memoryMiB
}

func idleWorkingSet(b *testing.B, release bool) {
	if bed == nil {
		b.Skip("no test bed")
	}
	// Unique per run, for -count.
	name := fmt.Sprintf("bench-ws-off-%d", time.Now().UnixMilli()%1e6)
	args := []string{"--release-memory-when-idle=false"}
	if release {
		name, args = fmt.Sprintf("bench-ws-on-%d", time.Now().UnixMilli()%1e6), nil
	}
	cg, err := testbed.NewCgroup(fmt.Sprintf("nodeconfd-%s-%d", name, os.Getpid()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { // after the node's cleanup, which stops the daemon
		if err := cg.Remove(); err != nil {
			b.Log(err)
		}
	})
	n, _, _ := benchNodeWith(b, name, testbed.NodeOptions{Cgroup: cg, ExtraArgs: args})
	pid, err := daemonPID(n.Name)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	gap, long := idleGap, longIdle
	if smoke() {
		gap, long = time.Second, 3*time.Second
	}
	readings := []memReading{settleAndRead(ctx, b, n, cg, pid, release, 1, 0, "start +0s"),
		settleAndRead(ctx, b, n, cg, pid, release, 1, gap, "start")}
	iters := 0
	for b.Loop() {
		iters++
		cfg := fmt.Sprintf("rendered-%s-%d", name, iters)
		if err := bed.CreateConfig(ctx, registriesConfig(cfg, fmt.Sprintf("mirror-%d.example.com", iters))); err != nil {
			b.Fatal(err)
		}
		ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		w := watchMCN(ictx, b, n.Name)
		if err := n.SetDesired(ictx, cfg); err != nil {
			b.Fatal(err)
		}
		if _, err := waitUpdated(ictx, w, cfg); err != nil {
			b.Fatal(err)
		}
		cancel()
		readings = append(readings, settleAndRead(ctx, b, n, cg, pid, release, 1+iters, gap,
			fmt.Sprintf("update %d", iters)))
	}
	updated := readings[len(readings)-1]
	readings = append(readings, settleAndRead(ctx, b, n, cg, pid, release, 1+iters, long,
		fmt.Sprintf("idle %v", long)))
	last := readings[len(readings)-1]
	// What one Prometheus scrape adds, for a cluster that scrapes it.
	requests(b, n)
	time.Sleep(quiet)
	scraped := readMemory(b, cg, pid, "+1 scrape")
	readings = append(readings, scraped)
	// What memory pressure leaves: a limit a little above the anonymous
	// memory, for a second.
	if err := cg.Squeeze(scraped.cg.Anon + squeezeRoom); err != nil {
		b.Fatal(err)
	}
	time.Sleep(quiet)
	readings = append(readings, readMemory(b, cg, pid, "squeezed"))
	if err := cg.Unsqueeze(); err != nil {
		b.Fatal(err)
	}
	logReadings(b, n, readings)
	b.ReportMetric(mib(readings[1].cg.WorkingSet()), "MiB-ws-start")
	b.ReportMetric(mib(updated.cg.WorkingSet()), "MiB-ws-update")
	b.ReportMetric(mib(scraped.cg.WorkingSet()), "MiB-ws-scraped")
	b.ReportMetric(mib(readings[len(readings)-1].cg.WorkingSet()), "MiB-ws-squeezed")
	b.ReportMetric(mib(readings[len(readings)-1].cg.Current), "MiB-current-squeezed")
	b.ReportMetric(mib(last.cg.WorkingSet()), "MiB-ws-idle")
	b.ReportMetric(mib(last.cg.Current), "MiB-current-idle")
	b.ReportMetric(last.proc["VmRSS"], "MiB-RSS-idle")
}

// settleAndRead waits until the daemon is done, then lets it idle for gap
// and reads its memory. With the release on, done is its release-memory log
// line (the releases-th), and nothing scrapes it after it released: the
// manifests have it scraped by nothing, and each page a scrape reads back
// would count (see BenchmarkIdleWorkingSet). With the release off, done is
// its request counter standing still (settle).
func settleAndRead(ctx context.Context, b *testing.B, n *testbed.Node, cg *testbed.Cgroup, pid int,
	release bool, releases int, gap time.Duration, label string) memReading {
	b.Helper()
	if !release {
		settle(ctx, b, n, quiet)
	}
	for deadline := time.Now().Add(time.Minute); release; time.Sleep(100 * time.Millisecond) {
		log := n.DaemonLog()
		if strings.Contains(log, "Could not release memory") {
			b.Fatalf("the daemon could not release memory:\n%s", log)
		}
		if strings.Count(log, releasedLine) >= releases {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the daemon did not release memory %d times in a minute:\n%s", releases, log)
		}
	}
	time.Sleep(gap)
	return readMemory(b, cg, pid, label)
}

func readMemory(b *testing.B, cg *testbed.Cgroup, pid int, label string) memReading {
	b.Helper()
	m, err := cg.Memory()
	if err != nil {
		b.Fatal(err)
	}
	proc, err := memoryMiB(pid)
	if err != nil {
		b.Fatal(err)
	}
	return memReading{label: label, cg: m, proc: proc}
}

// logReadings logs the readings as a table, and the daemon's release lines.
func logReadings(b *testing.B, n *testbed.Node, readings []memReading) {
	b.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "MiB after       working-set  current  inactive_file  active_file  anon  file_mapped  "+
		"refaulted_file  VmRSS  RssAnon  RssFile\n")
	for _, r := range readings {
		fmt.Fprintf(&sb, "%-14s  %11.1f  %7.1f  %13.1f  %11.1f  %4.1f  %11.1f  %14.1f  %5.1f  %7.1f  %7.1f\n",
			r.label, mib(r.cg.WorkingSet()), mib(r.cg.Current), mib(r.cg.InactiveFile), mib(r.cg.ActiveFile),
			mib(r.cg.Anon), mib(r.cg.FileMapped), mib(r.cg.RefaultFile), r.proc["VmRSS"], r.proc["RssAnon"],
			r.proc["RssFile"])
	}
	// One log line for all releases: go test keeps 10 lines of a
	// benchmark's log without -v.
	var released []string
	for line := range strings.SplitSeq(n.DaemonLog(), "\n") {
		if _, fields, ok := strings.Cut(line, releasedLine); ok {
			var before, after int
			if i := strings.Index(fields, `"heapReleasedKiBBefore": `); i >= 0 {
				fmt.Sscanf(fields[i:], `"heapReleasedKiBBefore": %d, "heapReleasedKiBAfter": %d`, &before, &after)
			}
			released = append(released, fmt.Sprintf("%d→%d", before, after))
		}
	}
	if len(released) > 0 {
		fmt.Fprintf(&sb, "released (executable KiB resident before→after): %s", strings.Join(released, ", "))
	}
	b.Log("\n" + sb.String())
}

func mib(bytes uint64) float64 { return float64(bytes) / (1 << 20) }
