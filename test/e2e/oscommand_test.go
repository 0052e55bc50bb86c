package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

// OS 12: an rpm-ostree rebase hangs with a child holding its output: at
// --os-command-timeout the daemon kills the command's process group,
// cancels the transaction (rpm-ostree cancel), reports the failure and,
// retried, stages the image and converges. Nothing of the command lives on.
func TestOSCommandHangs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	osConfig(t, "rendered-os12-a", ign(nil), osImageA)
	osConfig(t, "rendered-os12-b", ign(nil), osImageB)
	fake := rpmOstree(osImageA)
	n, log := nodeOpts(t, "os12", "rendered-os12-a", testbed.NodeOptions{OS: &fake, ExtraArgs: []string{
		"--os-command-timeout", "5s", "--retry-initial", "1s"}})
	if err := os.WriteFile(filepath.Join(n.Sys.Root, osfake.HangFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-os12-b"); err != nil {
		t.Fatal(err)
	}
	st, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "NodeDegraded")
		return c != nil && c.Status == "True"
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := testbed.Find(st, "NodeDegraded").Message
	if !strings.Contains(msg, "timed out after 5s") || !strings.Contains(msg, "rpm-ostree cancel: Cancelling transaction: rebase") {
		t.Errorf("NodeDegraded message %q should say the rebase timed out and was cancelled", msg)
	}
	if err := waitCurrent(ctx, log, "rendered-os12-b"); err != nil {
		t.Fatal(err)
	}
	got := callsLike(t, n, "rebase", "cancel")
	want := []string{"rpm-ostree rebase --experimental -- ostree-unverified-registry:" + osImageB, "rpm-ostree cancel",
		"rpm-ostree rebase --experimental -- ostree-unverified-registry:" + osImageB}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n got %q\nwant %q", got, want)
	}
	if alive := heldChildren(n.Sys.Root); len(alive) > 0 {
		t.Errorf("the hung command's child still runs: pids %v", alive)
	}
}

// heldChildren lists the fake's stuck children run chrooted into root.
func heldChildren(root string) []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || string(cmd) != osfake.Binary+"\x00hold\x00" {
			continue
		}
		if r, err := os.Readlink(filepath.Join("/proc", e.Name(), "root")); err == nil && r == root {
			if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !strings.Contains(string(stat), ") Z ") {
				pids = append(pids, e.Name())
			}
		}
	}
	return pids
}
