// Package e2e runs the daemon on the test bed: a real API server, real
// systemd nodes and real files, and checks what an administrator would see.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// bed is shared by the package's tests; each test uses its own node names.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	dir, err := os.MkdirTemp("", "nodeconfd-e2e-")
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
