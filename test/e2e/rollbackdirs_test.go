package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Issue 27: an update that fails in its write (its OS image cannot be
// pulled) after making folders for its files rolls them back with the
// files, so a later config with a file where a folder was is applied, not
// refused.
func TestFailedWriteRemovesNewFolders(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	osConfig(t, "rendered-rbd-a", ign(nil), osImageA)
	n, log := osNode(t, "rbd", "rendered-rbd-a", rpmOstree(osImageA))
	osConfig(t, "rendered-rbd-b", ign(map[string]string{"/etc/rbd/new/deep/f": "f\n", "/etc/rbd-conf": "b\n"}), osImageB)
	if err := n.FailOSPulls(1000); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-rbd-b"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	if err := n.StopDaemon(); err != nil { // a retry's step ends and rolls back
		t.Fatal(err)
	}
	if c := waitLatest(ctx, log, "AppliedFilesAndOS", "(rolled back this update's writes)"); c != nil {
		t.Errorf("AppliedFilesAndOS = %s %q", c.Status, c.Message)
	}
	for _, p := range []string{"/etc/rbd", "/etc/rbd-conf"} {
		if _, err := os.Lstat(filepath.Join(n.Sys.Root, p)); !os.IsNotExist(err) {
			t.Errorf("%s left by the failed update: %v", p, err)
		}
	}
	osConfig(t, "rendered-rbd-c", ign(map[string]string{"/etc/rbd": "a file now\n"}), osImageA)
	if err := n.FailOSPulls(0); err != nil {
		t.Fatal(err)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-rbd-c"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-rbd-c"); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, n, "/etc/rbd"); got != "a file now\n" {
		t.Errorf("/etc/rbd = %q", got)
	}
}
