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

// Update 7: drift: editing a managed file sets NodeDegraded=True naming it;
// restoring it clears it.
func TestDrift(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := "/etc/containers/registries.d/drift.yaml"
	n, log := managedFileNode(ctx, t, "u7", path)
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

// managedFileNode is a node named name updated from an empty config
// (rendered-<name>-a) to one that writes "managed: true\n" to path
// (rendered-<name>-b), a registries.d file: no reboot.
func managedFileNode(ctx context.Context, t *testing.T, name, path string) (*testbed.Node, *testbed.StatusLog) {
	t.Helper()
	config(t, "rendered-"+name+"-a", ign(nil))
	config(t, "rendered-"+name+"-b", ign(map[string]string{path: "managed: true\n"}))
	n, log := node(t, name, "rendered-"+name+"-a")
	if err := n.SetDesired(ctx, "rendered-"+name+"-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-"+name+"-b"); err != nil {
		t.Fatal(err)
	}
	return n, log
}
