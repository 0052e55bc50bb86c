// Package bench measures the daemon on the test bed: how fast it applies a
// rebootless update, how many API requests an update, a start-up and an idle
// minute cost, its idle memory (VmRSS, and its container's working set as
// the kubelet counts it), and how fast it drains 100 pods next to
// `kubectl drain`. Run it as root:
//
//	go test -run '^$' -bench . -benchtime 5x ./test/bench/
//
// NODECONFD_BENCH_SMOKE=1 runs the slow ones small (short idles, no
// kubectl drain beside ours, smaller namespaces): `make test` runs every
// benchmark once so, to keep them from rotting; the figures are `make
// bench`'s.
//
// NODECONFD_BENCH_TRACE=1 routes each daemon's API requests through a
// logging proxy and prints them, to see which requests a figure counts;
// NODECONFD_BENCH_TRACE=body adds the start of each request's body.
package bench

import (
	"flag"
	"os"
	"testing"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// bed is shared by the package's benchmarks; each uses its own node. It is
// nil when no benchmark runs.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	testbed.Main(m, "nodeconfd-bench-", func() bool {
		flag.Parse()
		f := flag.Lookup("test.bench")
		return f != nil && f.Value.String() != "" // no benchmark selected: no bed needed
	}, func(b *testbed.Bed) { bed = b })
}

// smoke says whether the benchmarks run small (NODECONFD_BENCH_SMOKE).
func smoke() bool { return os.Getenv("NODECONFD_BENCH_SMOKE") != "" }
