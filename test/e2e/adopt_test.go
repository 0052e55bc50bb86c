package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// A node with no currentConfig whose files already match its desired config
// adopts it without an update: nothing written, no reboot.
func TestAdoptsMatchingNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := "/etc/nodeconfd-adopt.conf"
	config(t, "rendered-adopt-a", ign(map[string]string{path: "already here\n"}))
	n, err := bed.AddNode(ctx, "adopt", testbed.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", n.DaemonLog())
		}
		n.Stop(context.Background())
	})
	host := filepath.Join(n.Sys.Root, path)
	if err := os.WriteFile(host, []byte("already here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(host)
	log, err := bed.RecordStatus(ctx, "adopt")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-adopt-a"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-adopt-a"); err != nil {
		t.Fatal(err)
	}
	if msg := log.Condition("Updated").Message; !strings.Contains(msg, "adopted") {
		t.Errorf("Updated message %q, want it to say the config was adopted", msg)
	}
	after, _ := os.Stat(host)
	if !os.SameFile(before, after) {
		t.Error("the matching file was rewritten")
	}
	if a := getNode(t, "adopt").Annotations["machineconfiguration.openshift.io/currentConfig"]; a != "rendered-adopt-a" {
		t.Errorf("currentConfig = %q", a)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
}
