// Package e2e runs the daemon on the test bed: a real API server, real
// systemd nodes and real files, and checks what an administrator would see.
//
// The tests run in parallel on one bed (the Makefile's -parallel bounds
// how many at once). A new test must be parallel-safe:
//   - call t.Parallel() first, and share nothing with other tests: its
//     own node names, MachineConfig names (rendered-<node>-…: the
//     failed-elsewhere check holds back every node whose desired config
//     has a name that failed on another node), pod, ReplicaSet and
//     PodDisruptionBudget names (e.g. web-<node>) and cluster-scoped
//     objects;
//   - start nodes through node or nodeOpts;
//   - look only at its own objects: select Nodes, pods and Events
//     by its names, never assert on a list of all of them;
//   - no t.Setenv and no package-level variables it changes.
//
// A test that disrupts the whole bed (it restarts the API server, e.g.
// TestFaultAPIServerRestart) stays serial: Go runs the serial tests one
// after another first, and the parallel ones only once they are done.
package e2e

import (
	"testing"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// bed is shared by the package's tests; each test uses its own node names.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	testbed.Main(m, "nodeconfd-e2e-", nil, func(b *testbed.Bed) { bed = b })
}
