// Package e2e runs the daemon on the test bed: a real API server, real
// systemd nodes and real files, and checks what an administrator would see.
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
