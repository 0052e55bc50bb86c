// Package bench measures the daemon on the test bed: how fast it applies a
// rebootless update, how many API requests an update, a start-up and an idle
// minute cost, and its idle memory. Run it as root:
//
//	go test -run '^$' -bench . -benchtime 5x ./test/bench/
//
// NODECONFD_BENCH_TRACE=1 routes each daemon's API requests through a
// logging proxy and prints them, to see which requests a figure counts.
package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// bed is shared by the package's benchmarks; each uses its own node. It is
// nil when no benchmark runs.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmark selected: no bed needed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	dir, err := os.MkdirTemp("", "nodeconfd-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bed, err = testbed.Start(ctx, dir, os.Stderr)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the test bed:", err)
		os.Exit(1)
	}
	code := m.Run()
	bed.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}
