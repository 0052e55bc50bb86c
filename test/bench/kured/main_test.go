// Package kured measures nodeconfd's reboot on request beside kured
// (kubereboot/kured), the reboot daemon it stands in for, on one bed of
// real nodes (testbed.StartCluster: kubelets, containerd, the release
// manifest's DaemonSet and controller pulled from the bed's registry):
// the same three nodes, the same sentinel file (/run/reboot-required), the
// same reboot (systemd's, inside the node), one node at a time, a 10 s
// check period each. docs/kured.md has the settings, the figures and why
// they differ. It builds kured from its source (hack/build-kured.sh).
//
// It runs only as a benchmark, once, as root (`make bench` runs it):
//
//	go test -run '^$' -bench RebootVsKured -benchtime 1x -timeout 40m ./test/bench/kured/
//
// NODECONFD_KURED_CONTROL=1 measures nodeconfd twice before kured, the
// second time on nodes booting for the third time, as kured's do.
//
// `make test` does not run it (its benchmark smoke run lists test/bench
// alone): it takes about 10 minutes, most of them kured's own waits.
package kured

import (
	"flag"
	"os"
	"testing"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// bed is the cluster bed of the benchmark; nil when no benchmark runs.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmark selected: no bed
	}
	testbed.ClusterMain(m, "nodeconfd-kured-", func(b *testbed.Bed) { bed = b })
}
