package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Update 5: configs that cannot or must not be applied: a clear error in the
// status naming the object and the field, and nothing written. Rolling the
// node back to its config recovers it.
func TestBadConfigs(t *testing.T) {
	t.Parallel()
	dir := "/etc/nodeconfd-bad"
	// The retry of a refused config waits 30 s (the bed's is 1 s), so that
	// the checks below read the refusal's status, not the retry's start;
	// setting the base config back wakes the daemon at once.
	n, log := nodeWithPolicy(t, "u5", "rendered-u5-base", "nodeDisruptionPolicy:\n  files:\n  - path: "+dir+"/\n    actions: [{type: None}]\n",
		"--retry-initial", "30s", "--retry-max", "1m")
	config(t, "rendered-u5-base", ign(nil))
	if err := os.MkdirAll(filepath.Join(n.Sys.Root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlink in the node's root that leads out of it.
	if err := os.Symlink("/tmp", filepath.Join(n.Sys.Root, dir, "escape")); err != nil {
		t.Fatal(err)
	}
	good := `{"path":"` + dir + `/good.conf","contents":{"source":"data:,good"}}`
	cases := []struct {
		name, ignition string
		// cond is the condition that carries the error; compatible=false
		// means UpdateCompatible=False.
		cond, field, state string
	}{
		{"disks", `{"ignition":{"version":"3.4.0"},"storage":{"files":[` + good + `],"disks":[{"device":"/dev/vdb","wipeTable":true}]}}`,
			"UpdateCompatible", "spec.config.storage.disks", "Unreconcilable"},
		{"badjson", `{"ignition":{"version":"3.4.0"},"storage":{"files":"not-a-list"}}`, "UpdateCompatible", "spec.config", "Degraded"},
		{"version", `{"ignition":{"version":"2.2.0"}}`, "UpdateCompatible", "spec.config.ignition.version", "Degraded"},
		// The dotdot and mode cases are in the hostile corpus (hostile_test.go).
		{"symlink", `{"ignition":{"version":"3.4.0"},"storage":{"files":[` + good + `,{"path":"` + dir + `/escape/owned","contents":{"source":"data:,x"}}]}}`,
			"UpdateCompatible", "spec.config.storage.files[1].path", "Degraded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			name := "rendered-u5-" + c.name
			config(t, name, c.ignition)
			if err := n.SetDesired(ctx, name); err != nil {
				t.Fatal(err)
			}
			if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
				t.Fatal(err)
			}
			want := "False"
			if c.cond != "UpdateCompatible" {
				want = "Unknown"
			}
			cond := log.Condition(c.cond)
			if string(cond.Status) != want || !strings.HasPrefix(cond.Message, "Error: ") ||
				!strings.Contains(cond.Message, c.field) {
				t.Errorf("%s = %s %q, want %s naming %s", c.cond, cond.Status, cond.Message, want, c.field)
			}
			if c.cond == "UpdateCompatible" && !strings.Contains(cond.Message, name) {
				t.Errorf("message %q does not name MachineConfig %s", cond.Message, name)
			}
			if deg := log.Condition("NodeDegraded"); deg.Message != cond.Message && c.cond == "UpdateCompatible" {
				t.Errorf("NodeDegraded message %q, want %q", deg.Message, cond.Message)
			}
			if st := getNode(t, "u5").Annotations["machineconfiguration.openshift.io/state"]; st != c.state {
				t.Errorf("state annotation %q, want %q", st, c.state)
			}
			wantEvents(t, "u5", "MachineConfigNode", "UpdateFailed")
			// Only an unreconcilable change fills status.irreconcilableChanges (mcn_test.go).
			if ic := log.Latest().IrreconcilableChanges; (len(ic) > 0) != (c.state == "Unreconcilable") {
				t.Errorf("status.irreconcilableChanges %+v for a %s refusal", ic, c.state)
			}
			for _, p := range []string{dir + "/good.conf", "/tmp/owned", dir + "/m", "/etc/shadow.x"} {
				if _, err := os.Lstat(filepath.Join(n.Sys.Root, p)); err == nil {
					t.Errorf("%s was written", p)
				}
			}
			if _, err := os.Lstat("/tmp/owned"); err == nil {
				t.Errorf("the host's /tmp/owned was written")
			}
			// Back to the base config: the node recovers.
			if err := n.SetDesired(ctx, "rendered-u5-base"); err != nil {
				t.Fatal(err)
			}
			if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
				t.Fatal(err)
			}
			if err := waitCurrent(ctx, log, "rendered-u5-base"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
