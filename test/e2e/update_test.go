package e2e

import (
	"context"
	"testing"
	"time"
)

// Update 1: a file under /etc/containers/registries.d/ changes: CRI-O is
// reloaded once, no drain, no reboot.
func TestRebootlessCRIOReload(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	config(t, "rendered-u1-a", ign(nil))
	config(t, "rendered-u1-b", ign(map[string]string{"/etc/containers/registries.d/mirror.yaml": "docker:\n  example.com: {}\n"}))
	n, log := node(t, "u1", "rendered-u1-a")
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-u1-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u1-b"); err != nil {
		t.Fatal(err)
	}
	wantSeq(t, log.Transitions(from), []string{
		"Updated=False", "UpdatePrepared=Unknown", "UpdateCompatible=Unknown", "UpdateCompatible=True", "UpdatePrepared=True",
		"UpdateExecuted=Unknown", "AppliedFilesAndOS=Unknown", "AppliedFilesAndOS=True", "UpdateExecuted=True",
		"UpdatePostActionComplete=Unknown", "ReloadedCRIO=Unknown", "ReloadedCRIO=True", "UpdatePostActionComplete=True",
		"UpdateComplete=Unknown", "UpdateComplete=True", "Resumed=True", "Updated=True",
	})
	for cond, reason := range map[string]string{"Cordoned": "NotRequired", "Drained": "NotRequired",
		"RebootedNode": "NotRequired", "Uncordoned": "NotRequired", "ReloadedCRIO": "UpdatePostActionCompleteReloadedCRIO"} {
		if c := log.Condition(cond); c.Reason != reason {
			t.Errorf("%s reason %q, want %q", cond, c.Reason, reason)
		}
	}
	if got := readNodeFile(t, n, "/etc/containers/registries.d/mirror.yaml"); got != "docker:\n  example.com: {}\n" {
		t.Errorf("file contents %q", got)
	}
	if c, _ := n.Sys.CRIOReloads(); c != 1 {
		t.Errorf("CRI-O reloads = %d, want 1", c)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
	node := getNode(t, "u1")
	if node.Spec.Unschedulable {
		t.Error("node left cordoned")
	}
	if a := node.Annotations["machineconfiguration.openshift.io/currentConfig"]; a != "rendered-u1-b" {
		t.Errorf("currentConfig = %q", a)
	}
	if a := node.Annotations["machineconfiguration.openshift.io/state"]; a != "Done" {
		t.Errorf("state = %q", a)
	}
}
