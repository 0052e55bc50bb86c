package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Update 7: drift: editing a managed file sets NodeDegraded=True naming it;
// restoring it clears it.
func TestDrift(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := "/etc/containers/registries.d/drift.yaml"
	config(t, "rendered-u7-a", ign(nil))
	config(t, "rendered-u7-b", ign(map[string]string{path: "managed: true\n"}))
	n, log := node(t, "u7", "rendered-u7-a")
	if err := n.SetDesired(ctx, "rendered-u7-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u7-b"); err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(n.Sys.Root, path)
	if err := os.WriteFile(host, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	if msg := log.Condition("NodeDegraded").Message; !strings.Contains(msg, path) || strings.Contains(msg, "edited by hand") {
		t.Errorf("NodeDegraded message %q should name %s and not show contents", msg, path)
	}
	if st := getNode(t, "u7").Annotations["machineconfiguration.openshift.io/state"]; st != "Degraded" {
		t.Errorf("state = %q, want Degraded", st)
	}
	wantEvents(t, "u7", "MachineConfigNode", "ConfigDrift")
	if err := os.WriteFile(host, []byte("managed: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
		t.Fatal(err)
	}
	if st := getNode(t, "u7").Annotations["machineconfiguration.openshift.io/state"]; st != "Done" {
		t.Errorf("state = %q, want Done", st)
	}
}
