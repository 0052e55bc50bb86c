package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A drifted node is brought back to the config it runs by an
// administrator's reapply annotation: the file is written again (a
// registries.d file: a CRI-O reload, no reboot), NodeDegraded clears, the
// annotation is gone and the node still runs its config; a second request
// on a node that matches is an adoption that writes nothing.
func TestReapplyAfterDrift(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := "/etc/containers/registries.d/reapply.yaml"
	n, log := managedFileNode(ctx, t, "reapply", path)
	host := filepath.Join(n.Sys.Root, path)
	if err := os.WriteFile(host, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	if err := n.Annotate(ctx, map[string]string{"nodeconfd.io/reapply": "alice: drift on reapply.yaml"}); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
		t.Fatal(err)
	}
	if err := waitReapplied(ctx, "reapply", "rendered-reapply-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-reapply-b"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(host); string(got) != "managed: true\n" {
		t.Errorf("%s = %q after the reapply, want the config's", path, got)
	}
	a := getNode(t, "reapply").Annotations
	if a["nodeconfd.io/reapply"] != "" || a["machineconfiguration.openshift.io/currentConfig"] != "rendered-reapply-b" ||
		a["machineconfiguration.openshift.io/state"] != "Done" {
		t.Errorf("annotations after the reapply: %v", a)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1 (a registries.d file needs a reload)", b)
	}
	wantEvents(t, "reapply", "MachineConfigNode", "Reapply")

	// Matching: adopted, nothing written.
	before, _ := os.Stat(host)
	if err := n.Annotate(ctx, map[string]string{"nodeconfd.io/reapply": "again"}); err != nil {
		t.Fatal(err)
	}
	if err := waitReapplied(ctx, "reapply", "rendered-reapply-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-reapply-b"); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(host); !os.SameFile(before, after) {
		t.Error("a reapply of a matching node rewrote its file")
	}
}

// waitReapplied waits until the node's reapply request is gone and the node
// is done with config.
func waitReapplied(ctx context.Context, node, config string) error {
	for {
		n, err := bed.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil {
			a := n.Annotations
			if a["nodeconfd.io/reapply"] == "" && a["machineconfiguration.openshift.io/currentConfig"] == config &&
				a["machineconfiguration.openshift.io/state"] == "Done" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for node %s to apply %s again: %w (last read: %v)", node, config, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
