package progress

import (
	"reflect"
	"strings"
	"testing"
)

func TestRoundTripAndVersion(t *testing.T) {
	r := New("a", "b")
	r.MarkDone(Step{Name: "prepare", Message: "ok"})
	r.MarkDone(Step{Name: "prepare", Message: "again"})
	r.Reboot.FromBootID = "x"
	data, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Done("prepare") || got.Done("write") || len(got.Steps) != 1 || got.Step("prepare").Message != "again" ||
		got.Reboot.FromBootID != "x" {
		t.Errorf("round trip: %+v", got)
	}
	if _, err := Unmarshal([]byte(`{"version":3}`)); err == nil || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("other version: %v", err)
	}
	if _, err := Unmarshal([]byte(`{`)); err == nil {
		t.Error("bad JSON accepted")
	}
}

func TestForget(t *testing.T) {
	r := New("a", "b")
	for _, s := range []string{"prepare", "cordon", "other"} {
		r.MarkDone(Step{Name: s})
	}
	r.Forget("cordon")
	r.Forget("never-done")
	if r.Done("cordon") || !r.Done("prepare") || !r.Done("other") || len(r.Steps) != 2 {
		t.Errorf("after Forget(cordon): %+v", r.Steps)
	}
}

// A replaced update hands on the kernel arguments it may have left on the
// booted deployment: those it added, its current config's once its write
// was done, and whatever it had itself inherited.
func TestReplacing(t *testing.T) {
	written := New("a", "b")
	written.Prepare.OS = &OSPlan{FromKernelArgs: []string{"x", "y"}}
	written.Inherited.EarlierKernelArgs = []string{"w", "x"}
	written.Cordon.ByUs, written.Cordon.Own = true, true
	written.MarkDone(Step{Name: "write"})
	notWritten := New("a", "b")
	notWritten.Prepare.OS = &OSPlan{FromKernelArgs: []string{"x"}, KernelArgsAdded: []string{"v", "w"}}
	notWritten.Inherited.EarlierKernelArgs = []string{"w"}
	unplanned := New("a", "b")
	drained := New("a", "b")
	drained.Cordon.ByUs, drained.Cordon.Own = true, true
	for _, s := range []string{"detect", "prepare", "cordon", "drain"} {
		drained.MarkDone(Step{Name: s})
	}

	tests := []struct {
		name     string
		old      *Record
		want     []string
		cordoned bool
	}{
		{"write done: its cordon stays", written, []string{"w", "x", "y"}, true},
		{"write not done: what it added may be staged", notWritten, []string{"w", "v"}, false},
		{"not prepared", unplanned, nil, false},
		{"cordoned, not written: its cordon is given back (give-back step)", drained, nil, true},
	}
	for _, tt := range tests {
		n := Replacing(tt.old, "b", "c")
		if n.Current != "b" || n.Desired != "c" || len(n.Steps) != 0 {
			t.Errorf("%s: record %s -> %s with steps %v, want b -> c and none", tt.name, n.Current, n.Desired, n.Steps)
		}
		if strings.Join(n.Inherited.EarlierKernelArgs, " ") != strings.Join(tt.want, " ") || n.Cordon.ByUs != tt.cordoned {
			t.Errorf("%s: earlier %q cordoned %v, want %q %v", tt.name, n.Inherited.EarlierKernelArgs, n.Cordon.ByUs, tt.want, tt.cordoned)
		}
		if n.Cordon.Own {
			t.Errorf("%s: the replaced update's cordon taken as the new update's own", tt.name)
		}
	}
}

// What a written update left of its post action is owed by the update that
// replaces it, until it ran; a chain keeps every config that owes it.
func TestReplacingOwes(t *testing.T) {
	reboot := &ActionPlan{Reboot: true, Drain: true}
	restart := &ActionPlan{Actions: []Action{{Type: "Restart", Unit: "a.service"}}}
	rec := func(action *ActionPlan, steps ...string) *Record {
		r := New("a", "b")
		r.Prepare.Action = action
		for _, s := range steps {
			r.MarkDone(Step{Name: s})
		}
		return r
	}
	rebooted := rec(reboot, StepDetect, StepPrepare, StepWrite, StepReboot)
	asked := rec(reboot, StepDetect, StepPrepare, StepWrite)
	asked.Reboot.FromBootID = "boot-1" // a record older than WriteBootID
	writtenIn := rec(restart, StepDetect, StepPrepare, StepWrite)
	writtenIn.Write.BootID, writtenIn.Reboot.FromBootID = "boot-1", "boot-2"
	crioRan := rec(&ActionPlan{Actions: []Action{{Type: "Reload", Unit: "crio.service"}}}, StepDetect, StepPrepare, StepWrite)
	crioRan.MarkDone(Step{Name: StepReboot, Skipped: true})
	crioRan.MarkDone(Step{Name: StepReloadCRIO})
	skippedReboot := rec(restart, StepDetect, StepPrepare, StepWrite)
	skippedReboot.MarkDone(Step{Name: StepReboot, Skipped: true})
	chained := rec(restart, StepDetect, StepPrepare, StepWrite)
	chained.Inherited.Owed = &Owed{Configs: []string{"z"}, Action: *restart}
	notWritten := rec(reboot, StepDetect, StepPrepare)
	notWritten.Inherited.Owed = &Owed{Configs: []string{"z"}, Action: *reboot, BootID: "boot-0"}
	onRequest := rec(reboot, StepDetect, StepPrepare, StepWrite)
	onRequest.RebootRequest = "kernel update"
	none := rec(&ActionPlan{}, StepDetect, StepPrepare, StepWrite)
	postActionRan := rec(restart, StepDetect, StepPrepare, StepWrite)
	for _, s := range []string{StepReboot, StepReloadCRIO} {
		postActionRan.MarkDone(Step{Name: s, Skipped: true})
	}
	postActionRan.MarkDone(Step{Name: StepPostAction})

	tests := []struct {
		name string
		old  *Record
		want *Owed
	}{
		{"written, reboot not asked for", rec(reboot, StepDetect, StepPrepare, StepWrite),
			&Owed{Configs: []string{"b"}, Action: *reboot}},
		{"reboot asked for: a later boot pays it", asked, &Owed{Configs: []string{"b"}, Action: *reboot, BootID: "boot-1"}},
		{"the boot it wrote in: a later one pays it", writtenIn, &Owed{Configs: []string{"b"}, Action: *restart, BootID: "boot-1"}},
		{"its CRI-O reload ran the list", crioRan, nil},
		{"rebooted", rebooted, nil},
		{"a skipped reboot is not its post action", skippedReboot, &Owed{Configs: []string{"b"}, Action: *restart}},
		{"post action ran", postActionRan, nil},
		{"chain: its action covers what it owed", chained, &Owed{Configs: []string{"z", "b"}, Action: *restart}},
		{"not written: what it owed is still owed", notWritten, notWritten.Inherited.Owed},
		{"reboot on request: its request stays", onRequest, nil},
		{"no post action", none, nil},
		{"not begun", New("a", "b"), nil},
	}
	for _, tt := range tests {
		got := Replacing(tt.old, "b", "c").Inherited.Owed
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: owed %+v, want %+v", tt.name, got, tt.want)
		}
		if got != nil && tt.old.Inherited.Owed != nil {
			got.Configs[0] = "changed"
			if tt.old.Inherited.Owed.Configs[0] == "changed" {
				t.Errorf("%s: the new record shares the old one's configs", tt.name)
			}
		}
	}
}
