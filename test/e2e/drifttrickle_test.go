package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A managed file rewritten every 40 ms (a process fighting the config)
// is still reported: the drift monitor checks at most 2 s after a burst's
// first event, however long the burst goes on. Before, each event put the
// check off again and the report never came while the writes went on.
func TestDriftReportedDuringTrickle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := "/etc/containers/registries.d/trickle.yaml"
	n, log := managedFileNode(ctx, t, "dt", path)
	host := filepath.Join(n.Sys.Root, path)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // writes every 40 ms until stopped: never 200 ms of quiet
		defer close(done)
		for i := 0; ; i++ {
			_ = os.WriteFile(host, []byte(fmt.Sprintf("edited %d\n", i)), 0o644)
			select {
			case <-stop:
				return
			case <-time.After(40 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-done }()
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	if err := log.WaitFor(wctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatalf("no drift report while the file was rewritten every 40 ms: %v", err)
	}
}
