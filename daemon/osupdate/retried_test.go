package osupdate

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

// TestPullRetried: Retried hears of each retry of a pull (the metrics count
// them), not of the first try.
func TestPullRetried(t *testing.T) {
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage})
	var retried []string
	retry := fastRetry
	retry.Retried = func(tool string) { retried = append(retried, tool) }
	u := &RpmOstree{Run: tools, Retry: retry}
	if err := os.WriteFile(filepath.Join(tools.root, osfake.FailPullsFile), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Stage(context.Background(), phases.OSChange{Image: newImage}); err != nil {
		t.Fatal(err)
	}
	if len(retried) != 2 || retried[0] != NameRpmOstree {
		t.Errorf("retries told %v, want two of %s", retried, NameRpmOstree)
	}
}
