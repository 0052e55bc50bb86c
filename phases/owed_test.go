package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// crioFiles is a config of three files whose rule reloads CRI-O: the
// summary shows three reasons, and must still say what is owed.
const crioFiles = `{"ignition":{"version":"3.4.0"},"storage":{"files":[` +
	`{"path":"/etc/containers/registries.d/a.yaml","contents":{"source":"data:,a"}},` +
	`{"path":"/etc/containers/registries.d/b.yaml","contents":{"source":"data:,b"}},` +
	`{"path":"/etc/containers/registries.d/c.yaml","contents":{"source":"data:,c"}}]}}`

// An update that replaced written ones runs the post action they left
// undone with its own (progress.Owed): a CRI-O reload that owes a reboot
// drains and reboots, unless a boot since their write paid it; owed actions
// run after its own, without the drain that ran before their write.
func TestRunnerRunsOwedPostAction(t *testing.T) {
	reboot := progress.ActionPlan{Reboot: true, Drain: true, DrainReason: "the node reboots"}
	restart := progress.ActionPlan{Actions: []progress.Action{{Type: "Restart", Unit: "foo.service"}}}
	drained := progress.ActionPlan{Actions: []progress.Action{{Type: "Drain"}, {Type: "Restart", Unit: "foo.service"}},
		Drain: true, DrainReason: "the policy asks for a drain"}
	for _, tc := range []struct {
		name        string
		owed        *progress.Owed
		singleNode  bool
		wantCalls   []string // systemd calls
		wantCluster []string
		err         error
		wantOwed    bool   // the record keeps it
		owes        string // what UpdateCompatible says is owed, when set
	}{
		{"reboot, no boot known", &progress.Owed{Configs: []string{"z"}, Action: reboot}, false,
			[]string{"boot-id", "boot-id", "reboot"}, []string{"cordon", "drain"}, phases.ErrRebooting, true, ""},
		{"reboot, not booted since the write", &progress.Owed{Configs: []string{"z"}, Action: reboot, BootID: "boot-0"}, false,
			[]string{"boot-id", "boot-id", "boot-id", "reboot"}, []string{"cordon", "drain"}, phases.ErrRebooting, true, ""},
		{"reboot on a single node: not drained", &progress.Owed{Configs: []string{"z"}, Action: reboot}, true,
			[]string{"boot-id", "boot-id", "reboot"}, nil, phases.ErrRebooting, true, ""},
		{"booted since the write: all paid", &progress.Owed{Configs: []string{"z"}, Action: restart, BootID: "boot-earlier"}, false,
			[]string{"boot-id", "is-enabled crio.service", "boot-id", "reload crio.service"}, []string{"state b Done"}, nil, false, ""},
		{"an owed restart after its own reload", &progress.Owed{Configs: []string{"z"}, Action: restart}, false,
			[]string{"is-enabled crio.service", "is-enabled foo.service", "boot-id", "reload crio.service", "restart foo.service"},
			[]string{"state b Done"}, nil, true, ""},
		{"the owed drain ran before their write", &progress.Owed{Configs: []string{"z"}, Action: drained}, false,
			[]string{"is-enabled crio.service", "is-enabled foo.service", "boot-id", "reload crio.service", "restart foo.service"},
			[]string{"state b Done"}, nil, true, "z (written, replaced before its post action ran): Restart foo.service [owed]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			units.SetEnabled("foo.service", "enabled")
			r := newRunner(configs{"a": empty, "b": crioFiles}, h, cl, units, w)
			r.Record.Inherited.Owed, r.SingleNode = tc.owed, tc.singleNode
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
			if tc.owes != "" && !strings.Contains(c.Message, tc.owes) {
				t.Errorf("UpdateCompatible %q does not say %q", c.Message, tc.owes)
			}
			if (r.Record.Inherited.Owed != nil) != tc.wantOwed {
				t.Errorf("record's Owed %+v, want kept %v", r.Record.Inherited.Owed, tc.wantOwed)
			}
		})
	}
}

// A reload or restart of a unit the desired config removes, as a unit or as
// its file, is not owed: the unit is gone.
func TestOwedUnitRemoved(t *testing.T) {
	for _, tc := range []struct {
		name string
		diff plan.Diff
		want bool
	}{
		{"unit removed", plan.Diff{RemovedUnits: []plan.Unit{{Name: "foo.service"}}}, true},
		{"its file removed", plan.Diff{RemovedFiles: []string{"/usr/lib/systemd/system/foo.service"}}, true},
		{"another unit removed", plan.Diff{RemovedUnits: []plan.Unit{{Name: "bar.service"}}}, false},
		{"a file elsewhere removed", plan.Diff{RemovedFiles: []string{"/etc/foo.service"}}, false},
	} {
		if got := phases.RemovesUnit(tc.diff, "foo.service"); got != tc.want {
			t.Errorf("%s: removes foo.service %v, want %v", tc.name, got, tc.want)
		}
	}
	if phases.RemovesUnit(plan.Diff{RemovedUnits: []plan.Unit{{Name: ""}}}, "") {
		t.Error("an action with no unit (Drain, DaemonReload) taken as a removed unit's")
	}
}

// An owed restart of a unit the desired config removes is dropped: only
// the update's own action runs (here none, by the unit's rule).
func TestRunnerDropsOwedRestartOfRemovedUnit(t *testing.T) {
	withUnit := `{"ignition":{"version":"3.4.0"},"systemd":{"units":[{"name":"foo.service","contents":"[Service]\nExecStart=/bin/true\n"}]}}`
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	units.SetEnabled("foo.service", "enabled")
	r := newRunner(configs{"a": withUnit, "b": empty}, h, cl, units, w)
	r.Env.Ports.Policy = plan.DefaultPolicy().With(plan.Policy{Units: []plan.UnitRule{
		{Name: "foo.service", Actions: []plan.Action{{Type: plan.ActNone}}, Source: "units[0]"}}})
	r.Record.Inherited.Owed = &progress.Owed{Configs: []string{"z"},
		Action: progress.ActionPlan{Actions: []progress.Action{{Type: "Restart", Unit: "foo.service"}}}}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range units.CallLog() {
		if strings.Contains(c, "restart") {
			t.Errorf("systemd call %q: the owed restart of a removed unit ran", c)
		}
	}
}

// The write saves the boot it writes in for an update with a post action
// (a later boot pays it), and none for an update without; a write tried
// again in a later boot saves that one.
func TestWriteSavesItsBoot(t *testing.T) {
	for _, tc := range []struct {
		name, desired, want string
		earlier             string // WriteBootID of an earlier try
	}{
		{"a CRI-O reload", crioFiles, "boot-0", ""},
		{"no post action", file("/var/lib/kubelet/config.json", "x"), "", ""},
		{"tried again in a later boot", crioFiles, "boot-0", "boot-earlier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			r := newRunner(configs{"a": empty, "b": tc.desired}, h, cl, units, w)
			if tc.earlier != "" {
				r.Record.Write.Started, r.Record.Write.BootID = true, tc.earlier
			}
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			rec, err := progress.Unmarshal(h.state[progress.FileName])
			if err != nil {
				t.Fatal(err)
			}
			if rec.Write.BootID != tc.want {
				t.Errorf("WriteBootID %q, want %q", rec.Write.BootID, tc.want)
			}
		})
	}
}

// Two boot IDs prove a boot only when they differ and are of one form.
// A boot is proven by hostnamed's IDs when both reads have one, else by
// the starts; a record of the release before keeps one of the two, and
// when it is hostnamed's and the read has none, nothing can be told.
func TestBootSince(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		thenID, thenStart, id, start string
		want, undecided              bool
	}{
		{"hostnamed both times, rebooted", "0a1b", "t100", "2c3d", "t200", true, false},
		{"hostnamed both times, same boot", "0a1b", "t100", "0a1b", "t100", false, false},
		{"hostnamed's ID decides over a start", "0a1b", "t100", "0a1b", "t200", false, false},
		{"hostnamed answered only then, same boot", "0a1b", "t100", "", "t100", false, false},
		{"hostnamed answered only now, same boot", "t100", "t100", "0a1b", "t100", false, false},
		{"hostnamed answered only now, rebooted", "t100", "t100", "0a1b", "t200", true, false},
		{"record before the start: hex then, none now", "0a1b", "", "", "t200", false, true},
		{"record before the start: hex both times", "0a1b", "", "2c3d", "t200", true, false},
		{"record before the start: start then, hostnamed now, same boot", "t100", "", "0a1b", "t100", false, false},
		{"record before the start: start then, rebooted", "t100", "", "0a1b", "t200", true, false},
		{"nothing kept", "", "", "0a1b", "t100", false, false},
	} {
		got, err := phases.BootSince(tc.id, tc.start, tc.thenID, tc.thenStart)
		if got != tc.want || (err != nil) != tc.undecided {
			t.Errorf("%s: since = %v, %v; want %v, undecided %v", tc.name, got, err, tc.want, tc.undecided)
		}
	}
}
