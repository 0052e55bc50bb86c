package phases_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// A sub-list runs its steps in order, saves each once done, and stops at
// a reboot; run again (the daemon after the boot, with the record read
// back), it resumes after the last step done and never runs one twice.
func TestSubListResumes(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	r := newRunner(configs{"a": empty, "b": empty}, h, &cluster{}, &systemdtest.Fake{}, &writes{})
	rec := &progress.Health{}
	var ran []string
	rebooted := false
	step := func(name string) phases.SubStep {
		return phases.SubStep{Name: name, Run: func(context.Context, phases.Data) (string, error) {
			ran = append(ran, name)
			if name == "reboot" && !rebooted {
				rebooted = true
				return "", phases.ErrRebooting
			}
			return name + " done", nil
		}}
	}
	list := []phases.SubStep{step("write"), step("reboot"), step("check")}
	if err := phases.RunSubList(context.Background(), r, rec, list); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("first run: %v, want ErrRebooting", err)
	}
	if _, saved := h.state[progress.FileName]; !saved || !rec.Done("write") || rec.Done("reboot") {
		t.Fatalf("after the reboot's request: saved %v, steps %+v", saved, rec.Steps)
	}
	if err := phases.RunSubList(context.Background(), r, rec, list); err != nil {
		t.Fatalf("after the boot: %v", err)
	}
	if want := []string{"write", "reboot", "reboot", "check"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v (the reboot step runs again after the boot, to see the new boot ID)", ran, want)
	}
	if s := rec.Step("check"); s == nil || s.Message != "check done" {
		t.Errorf("check recorded as %+v", s)
	}
	boom := errors.New("boom")
	failing := []phases.SubStep{{Name: "fails", Run: func(context.Context, phases.Data) (string, error) { return "", boom }}}
	if err := phases.RunSubList(context.Background(), r, rec, failing); !errors.Is(err, boom) || rec.Done("fails") {
		t.Errorf("a failing step: %v, done %v", err, rec.Done("fails"))
	}
}
