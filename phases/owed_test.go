package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// An update that replaced written ones runs the post action they left
// undone with its own (progress.Owed): a CRI-O reload that owes a reboot
// drains and reboots, unless a boot since paid the reboot; owed actions run
// after its own.
func TestRunnerRunsOwedPostAction(t *testing.T) {
	reboot := progress.ActionPlan{Reboot: true, Drain: true, DrainReason: "the node reboots"}
	restart := progress.ActionPlan{Actions: []progress.Action{{Type: "Restart", Unit: "foo.service"}}}
	for _, tc := range []struct {
		name        string
		owed        *progress.Owed
		wantCalls   []string // systemd calls
		wantCluster []string
		err         error
		wantOwed    bool // the record keeps it
	}{
		{"reboot not asked for", &progress.Owed{Configs: []string{"z"}, Action: reboot},
			[]string{"boot-id", "reboot"}, []string{"cordon", "drain"}, phases.ErrRebooting, true},
		{"reboot asked for, not booted since", &progress.Owed{Configs: []string{"z"}, Action: reboot, RebootFromBootID: "boot-0"},
			[]string{"boot-id", "boot-id", "reboot"}, []string{"cordon", "drain"}, phases.ErrRebooting, true},
		{"booted since: paid", &progress.Owed{Configs: []string{"z"}, Action: reboot, RebootFromBootID: "boot-earlier"},
			[]string{"boot-id", "is-enabled crio.service", "reload crio.service"}, []string{"state b Done"}, nil, false},
		{"an owed restart after its own reload", &progress.Owed{Configs: []string{"z"}, Action: restart},
			[]string{"is-enabled crio.service", "is-enabled foo.service", "reload crio.service", "restart foo.service"},
			[]string{"state b Done"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			units.SetEnabled("foo.service", "enabled")
			r := newRunner(configs{"a": empty, "b": file("/etc/containers/registries.d/a.yaml", "x")}, h, cl, units, w)
			r.Record.Owed = tc.owed
			if err := r.Run(context.Background()); !errors.Is(err, tc.err) {
				t.Fatalf("Run: %v, want %v", err, tc.err)
			}
			if strings.Join(units.CallLog(), ",") != strings.Join(tc.wantCalls, ",") {
				t.Errorf("systemd calls %v, want %v", units.CallLog(), tc.wantCalls)
			}
			if strings.Join(cl.calls, ",") != strings.Join(tc.wantCluster, ",") {
				t.Errorf("cluster calls %v, want %v", cl.calls, tc.wantCluster)
			}
			c := r.Status.Find(status.UpdateCompatible)
			if owed := strings.Contains(c.Message, "z (written, replaced before its post action ran): "); owed != tc.wantOwed {
				t.Errorf("UpdateCompatible %q: says the owed action %v, want %v", c.Message, owed, tc.wantOwed)
			}
			if (r.Record.Owed != nil) != tc.wantOwed {
				t.Errorf("record's Owed %+v, want kept %v", r.Record.Owed, tc.wantOwed)
			}
		})
	}
}
