package phases_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// The reboot step, tried again in the boot it asked to leave, asks again,
// also when hostnamed answered one of the two reads and not the other: a
// boot ID of one form against one of the other is not a reboot. Across a
// real reboot it is done whichever reads hostnamed answered.
func TestRebootStepAcrossHostnamedFlips(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after bool // hostnamed answers the first try's read, the second's
		rebooted      bool // the first try's reboot happened
	}{
		{"same boot, hostnamed starts answering", false, true, false},
		{"same boot, hostnamed stops answering", true, false, false},
		{"same boot, hostnamed both times", true, true, false},
		{"rebooted, hostnamed stops answering", true, false, true},
		{"rebooted, hostnamed starts answering", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
			units.SetHostnamed(tc.before)
			refused := errors.New("logind refused")
			if !tc.rebooted {
				units.SetError("reboot", refused)
			}
			err := r.Run(context.Background())
			if tc.rebooted && !errors.Is(err, phases.ErrRebooting) || !tc.rebooted && !errors.Is(err, refused) {
				t.Fatalf("first try: %v", err)
			}
			rec, err := progress.Unmarshal(h.state[progress.FileName])
			if err != nil {
				t.Fatal(err)
			}
			units.SetError("reboot", nil)
			units.SetHostnamed(tc.after)
			calls := len(units.CallLog())
			r2 := &phases.Runner{Env: r.Env, Status: stager(w, w.last), Node: "n1", Log: zap.NewNop(), Now: time.Now,
				Phases: phases.All(), Record: rec}
			err = r2.Run(context.Background())
			asked := slices.Contains(units.CallLog()[calls:], "reboot")
			if tc.rebooted {
				if err != nil || asked {
					t.Fatalf("after the reboot: %v, asked for another: %v", err, asked)
				}
				if c := status.Find(w.last, status.RebootedNode); c.Status != metav1.ConditionTrue {
					t.Errorf("RebootedNode = %s %q", c.Status, c.Message)
				}
				return
			}
			if !errors.Is(err, phases.ErrRebooting) || !asked {
				t.Fatalf("tried again in the same boot: %v, asked for the reboot again: %v; want it asked", err, asked)
			}
		})
	}
}

// After the reboot, a record of the release before (hostnamed's boot ID
// only) read while hostnamed gives none cannot tell: the step fails and
// tries again, rather than reboot the node a second time; once hostnamed
// answers, the reboot is done.
func TestRebootStepWaitsForHostnamedWithOldRecord(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("first try: %v", err)
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	rec.Reboot.FromBootStart = "" // as the release before wrote it
	units.SetHostnamed(false)
	calls := len(units.CallLog())
	resume := func() error {
		r2 := &phases.Runner{Env: r.Env, Status: stager(w, w.last), Node: "n1", Log: zap.NewNop(), Now: time.Now,
			Phases: phases.All(), Record: rec}
		return r2.Run(context.Background())
	}
	if err := resume(); err == nil || errors.Is(err, phases.ErrRebooting) || slices.Contains(units.CallLog()[calls:], "reboot") {
		t.Fatalf("without hostnamed: %v, calls %v; want an error and no reboot", err, units.CallLog()[calls:])
	}
	units.SetHostnamed(true)
	if err := resume(); err != nil {
		t.Fatalf("with hostnamed again: %v", err)
	}
	if c := status.Find(w.last, status.RebootedNode); c.Status != metav1.ConditionTrue {
		t.Errorf("RebootedNode = %s %q", c.Status, c.Message)
	}
}
