package phases_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// osConfigs serves MachineConfigs with OS fields.
type osConfigs map[string]*mcfgv1.MachineConfig

func (c osConfigs) MachineConfig(_ context.Context, name string) (*mcfgv1.MachineConfig, error) {
	if mc, ok := c[name]; ok {
		return mc, nil
	}
	return nil, errors.New("not found")
}

func osMC(name, ignition, image string, kargs ...string) *mcfgv1.MachineConfig {
	mc := &mcfgv1.MachineConfig{}
	mc.Name = name
	mc.Spec.Config = runtime.RawExtension{Raw: []byte(ignition)}
	mc.Spec.OSImageURL = image
	mc.Spec.KernelArguments = kargs
	return mc
}

// fakeOS is an OS updater that records its calls; booted is what a boot
// brings up.
type fakeOS struct {
	calls       []string
	stageErr    error
	supportsErr error
	booted      phases.BootedOS
	pending     bool
	unstageErr  error
}

func (f *fakeOS) Name() string { return "fake-os" }
func (f *fakeOS) Supports(phases.OSChange) error {
	return f.supportsErr
}
func (f *fakeOS) Stage(_ context.Context, c phases.OSChange) (string, error) {
	f.calls = append(f.calls, "stage "+c.Image+" -"+strings.Join(c.Removed, ",")+" +"+strings.Join(c.Added, ","))
	f.pending = true
	if f.stageErr != nil {
		return "", f.stageErr
	}
	return "Staged OS image " + c.Image, nil
}
func (f *fakeOS) Unstage(context.Context) (string, error) {
	f.calls = append(f.calls, "unstage")
	if f.unstageErr != nil {
		return "", f.unstageErr
	}
	if !f.pending {
		return "", nil
	}
	f.pending = false
	return "removed the pending deployment", nil
}
func (f *fakeOS) Rollback(_ context.Context, t phases.OSTarget) (string, error) {
	f.calls = append(f.calls, "rollback "+t.Image)
	f.pending = true
	return "Queued the rollback deployment " + t.Image, nil
}
func (f *fakeOS) Booted(_ context.Context, image string) (phases.BootedOS, error) {
	f.calls = append(f.calls, "booted "+image)
	b := f.booted
	b.IsImage = image == "" || b.Image == image
	return b, nil
}
func (f *fakeOS) Cleanup(context.Context) (string, error) {
	f.calls = append(f.calls, "cleanup")
	return "cleaned up", nil
}

func osRunner(cfgs osConfigs, h *host, units *systemdtest.Fake, w *writes, osu phases.OSUpdater, rec *progress.Record, conds []metav1.Condition) *phases.Runner {
	env := phases.Env{Ports: phases.Ports{Configs: cfgs, Cluster: &cluster{}, Host: h, Units: units, Policy: plan.DefaultPolicy()}}
	if osu != nil {
		env.OS = osu
	}
	if conds == nil {
		conds = status.Initial(metav1.Now())
	}
	r := &phases.Runner{Env: env, Status: stager(w, conds), Node: "n1", Log: zap.NewNop(), Now: time.Now, Phases: phases.All(), Record: rec}
	return r
}

// restartOS is the daemon started again after the node's boot: a runner
// from the record on disk, its done steps replayed and reloaded.
func restartOS(t *testing.T, cfgs osConfigs, h *host, units *systemdtest.Fake, w *writes, osu phases.OSUpdater) *phases.Runner {
	t.Helper()
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	r := osRunner(cfgs, h, units, w, osu, rec, w.last)
	return r
}

// A failed stage rolls back the files of the same update.
func TestOSStageFailureRollsBack(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	units, w := &systemdtest.Fake{}, &writes{}
	osu := &fakeOS{stageErr: errors.New("pull failed"), booted: phases.BootedOS{Image: "os:1"}}
	cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", file("/etc/a", "1"), "os:2", "nosmt")}
	r := osRunner(cfgs, h, units, w, osu, progress.New("a", "b"), nil)
	err := r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "staging the OS update with fake-os: pull failed (rolled back this update's writes; removed the pending deployment)") {
		t.Fatalf("Run: %v", err)
	}
	if !h.rolled || len(h.files) != 0 || !reflect.DeepEqual(h.written, []string{"/etc/a"}) {
		t.Errorf("written %v, left %v, rolled back %v", h.written, h.files, h.rolled)
	}
	if want := []string{"booted os:2", "stage os:2 - +nosmt", "unstage"}; !reflect.DeepEqual(osu.calls, want) || osu.pending {
		t.Errorf("OS calls %q, want %q", osu.calls, want)
	}
}

// An OS change the updater cannot make is refused in prepare: nothing written.
func TestOSChangeRefusedByUpdater(t *testing.T) {
	for _, tc := range []struct {
		name string
		osu  phases.OSUpdater
		msg  string
	}{
		{"unsupported", &fakeOS{supportsErr: errors.New("no kargs here"), booted: phases.BootedOS{Image: "os:1"}},
			`Error: MachineConfig "b": spec.kernelArguments: this node's OS updater fake-os cannot make the change: no kargs here`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			w := &writes{}
			cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", file("/etc/a", "1"), "os:1", "nosmt")}
			r := osRunner(cfgs, h, &systemdtest.Fake{}, w, tc.osu, progress.New("a", "b"), nil)
			err := r.Run(context.Background())
			var us *phases.UnsupportedError
			if !errors.As(err, &us) {
				t.Fatalf("Run: %v, want an UnsupportedError", err)
			}
			r.Fail(context.Background(), err)
			if c := status.Find(w.last, status.UpdateCompatible); c.Status != metav1.ConditionFalse || c.Message != tc.msg {
				t.Errorf("UpdateCompatible = %s %q, want False %q", c.Status, c.Message, tc.msg)
			}
			if len(h.written) != 0 || r.Record.Done("write") {
				t.Errorf("written %v", h.written)
			}
		})
	}
}

// A boot that did not bring up the staged image fails the reboot phase,
// naming both images, at every retry, and never reboots again.
func TestOSFallbackBootNoSecondReboot(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	units, w := &systemdtest.Fake{}, &writes{}
	osu := &fakeOS{booted: phases.BootedOS{Image: "os:1"}}
	cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", empty, "os:2")}
	r := osRunner(cfgs, h, units, w, osu, progress.New("a", "b"), nil)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	// The boot fell back: os:1 is still booted.
	for retry := 0; retry < 3; retry++ {
		r2 := restartOS(t, cfgs, h, units, w, osu)
		err := r2.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "booted OS image os:1, desired os:2") {
			t.Fatalf("retry %d: Run: %v", retry, err)
		}
		r2.Fail(context.Background(), err)
	}
	if n := strings.Count(strings.Join(units.CallLog(), ","), "reboot"); n != 1 {
		t.Errorf("%d reboots, want 1", n)
	}
	if d := status.Find(w.last, status.NodeDegraded); d.Status != metav1.ConditionTrue || !strings.Contains(d.Message, "os:2") {
		t.Errorf("NodeDegraded = %s %q", d.Status, d.Message)
	}
	for _, c := range osu.calls {
		if c == "cleanup" {
			t.Error("cleanup after a bad boot")
		}
	}
}

func TestBootedMismatch(t *testing.T) {
	tests := []struct {
		name           string
		b              phases.BootedOS
		kargs, removed []string
		want           string
	}{
		{"match", phases.BootedOS{Image: "x", IsImage: true, KernelArgs: []string{"rw", "a", "b"}}, []string{"a", "b"}, []string{"c"}, ""},
		{"unknown kargs", phases.BootedOS{Image: "x", IsImage: true}, []string{"a"}, nil, ""},
		{"image", phases.BootedOS{Image: "old", KernelArgs: []string{"a"}}, []string{"a"}, nil, "booted OS image old, desired new"},
		{"missing duplicate", phases.BootedOS{Image: "x", IsImage: true, KernelArgs: []string{"a", "b"}}, []string{"a", "a", "b"}, nil,
			"kernel arguments missing: a"},
		{"removed still there", phases.BootedOS{Image: "x", IsImage: true, KernelArgs: []string{"a", "c", "c"}}, []string{"a", "c"}, []string{"c", "d"},
			"removed kernel arguments still booted: c"},
		{"both", phases.BootedOS{Image: "old", KernelArgs: []string{"c"}}, []string{"a"}, []string{"c"},
			"booted OS image old, desired new; kernel arguments missing: a; removed kernel arguments still booted: c"},
	}
	for _, tt := range tests {
		if got := phases.BootedMismatch(tt.b, "new", tt.kargs, tt.removed); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The OS change is planned against the booted deployment when it lacks the
// current config's kernel arguments (a fallback) or there is no current
// config (adopting a node); else the configs' diff stands.
func TestPlanAgainstBooted(t *testing.T) {
	cfg := func(image string, kargs ...string) plan.Config {
		return plan.Config{OSImageURL: image, KernelArguments: kargs}
	}
	tests := []struct {
		name             string
		booted           phases.BootedOS
		adopting         bool
		current, desired plan.Config
		earlier          []string
		image            bool
		removed, added   []string
	}{
		{"booted has current's: config diff", phases.BootedOS{Image: "os:1", IsImage: true, KernelArgs: []string{"rw", "a", "b"}},
			false, cfg("os:1", "a", "b"), cfg("os:1", "b", "c"), nil, false, []string{"a"}, []string{"c"}},
		{"same image booted", phases.BootedOS{Image: "os:2", IsImage: true, KernelArgs: []string{"rw"}},
			false, cfg("os:1"), cfg("os:2"), nil, false, nil, nil},
		{"fallback: booted lacks current's", phases.BootedOS{Image: "os:1", KernelArgs: []string{"rw", "a", "a"}},
			false, cfg("os:2", "b"), cfg("os:2", "b", "c"), nil, true, nil, []string{"b", "c"}},
		{"image fallback alone keeps the kernel argument diff", phases.BootedOS{Image: "os:1", KernelArgs: []string{"rw", "a", "b"}},
			false, cfg("os:2", "a", "b"), cfg("os:2", "b", "c"), nil, true, []string{"a"}, []string{"c"}},
		{"fallback: removed only as often as booted has more", phases.BootedOS{Image: "os:1", IsImage: true, KernelArgs: []string{"x", "x"}},
			false, cfg("os:1", "x", "y"), cfg("os:1", "x"), nil, false, []string{"x"}, nil},
		{"adopting: add only what is missing", phases.BootedOS{Image: "os:1", IsImage: true, KernelArgs: []string{"rw", "nosmt"}},
			true, cfg(""), cfg("os:1", "nosmt", "quiet"), nil, false, nil, []string{"quiet"}},
		{"adopting another image", phases.BootedOS{Image: "os:0", KernelArgs: []string{"rw", "nosmt"}},
			true, cfg(""), cfg("os:1", "nosmt"), nil, true, nil, nil},
		{"unknown kernel arguments keep the diff", phases.BootedOS{Image: "os:1", IsImage: true},
			true, cfg(""), cfg("os:1", "nosmt"), nil, false, nil, []string{"nosmt"}},
		{"fallback from an update replaced since: the earlier config's own are removed",
			phases.BootedOS{Image: "os:1", IsImage: true, KernelArgs: []string{"rw", "a", "z"}},
			false, cfg("os:1", "a", "y"), cfg("os:1", "c"), []string{"a", "z"}, false, []string{"a", "z"}, []string{"c"}},
		{"earlier kernel arguments the desired config keeps stay",
			phases.BootedOS{Image: "os:1", IsImage: true, KernelArgs: []string{"rw", "a", "z"}},
			false, cfg("os:1", "a"), cfg("os:1", "a", "z"), []string{"z"}, false, nil, nil},
	}
	for _, tt := range tests {
		diff, err := plan.Compare(tt.current, tt.desired)
		if err != nil {
			t.Fatal(err)
		}
		phases.PlanAgainstBooted(tt.booted, tt.adopting, tt.current, tt.desired, tt.earlier, &diff)
		if diff.OSImageChanged != tt.image || !reflect.DeepEqual(diff.KernelArgsRemoved, tt.removed) || !reflect.DeepEqual(diff.KernelArgsAdded, tt.added) {
			t.Errorf("%s: image %v -%q +%q, want %v -%q +%q", tt.name, diff.OSImageChanged, diff.KernelArgsRemoved, diff.KernelArgsAdded,
				tt.image, tt.removed, tt.added)
		}
	}
}

// After the reboot, a restarted daemon reloads the planned OS change from
// the progress record rather than asking the (changed) OS again: the post
// action stays the reboot, and the booted OS is checked.
func TestOSReloadKeepsPlan(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	units, w := &systemdtest.Fake{}, &writes{}
	osu := &fakeOS{booted: phases.BootedOS{Image: "os:1"}}
	cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", empty, "os:2")}
	r := osRunner(cfgs, h, units, w, osu, progress.New("a", "b"), nil)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	osu.booted = phases.BootedOS{Image: "os:2"} // the boot brought up os:2
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil || rec.Prepare.OS == nil || !rec.Prepare.OS.ImageChanged {
		t.Fatalf("saved OS plan %+v, %v", rec.Prepare.OS, err)
	}
	if err := restartOS(t, cfgs, h, units, w, osu).Run(context.Background()); err != nil {
		t.Fatalf("Run after the boot: %v", err)
	}
	if c := status.Find(w.last, status.RebootedNode); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "booted OS image os:2; cleaned up") {
		t.Errorf("RebootedNode = %s %q", c.Status, c.Message)
	}
}

// A pending deployment this update cannot remove (bootc without
// rpm-ostree; its own update timer staged it) is reported, and the update
// goes on with its files.
func TestOSNoChangeCannotUnstage(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	units, w := &systemdtest.Fake{}, &writes{}
	osu := &fakeOS{booted: phases.BootedOS{Image: "os:1", IsImage: true}, pending: true,
		unstageErr: errors.New("bootc cannot remove a staged deployment")}
	cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", file("/etc/a", "1"), "os:1")}
	r := osRunner(cfgs, h, units, w, osu, progress.New("a", "b"), nil)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	if c := status.Find(w.last, status.AppliedFilesAndOS); c.Message != "Applied 1 file. Left a pending OS deployment in place" {
		t.Errorf("AppliedFilesAndOS message %q", c.Message)
	}
	if h.files["/etc/a"] != "1" {
		t.Errorf("file /etc/a = %q", h.files["/etc/a"])
	}
}

// An update with no OS change removes a deployment left pending, and after
// its reboot checks that the node still runs the desired image.
func TestOSNoChangeUnstagesAndChecksBoot(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	units, w := &systemdtest.Fake{}, &writes{}
	osu := &fakeOS{booted: phases.BootedOS{Image: "os:1"}, pending: true}
	cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", file("/etc/a", "1"), "os:1")}
	r := osRunner(cfgs, h, units, w, osu, progress.New("a", "b"), nil)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	if want := []string{"booted os:1", "unstage"}; !reflect.DeepEqual(osu.calls, want) || osu.pending {
		t.Errorf("OS calls %q, want %q", osu.calls, want)
	}
	if c := status.Find(w.last, status.AppliedFilesAndOS); c.Message != "Applied 1 file. Removed the pending deployment" {
		t.Errorf("AppliedFilesAndOS message %q", c.Message)
	}
	// The boot brought up another image after all.
	osu.booted = phases.BootedOS{Image: "os:9"}
	err := restartOS(t, cfgs, h, units, w, osu).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "booted OS image os:9, desired os:1; this update staged no OS change") {
		t.Fatalf("Run after the boot: %v", err)
	}
}
