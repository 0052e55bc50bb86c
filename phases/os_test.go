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

	"github.com/nodeconfd/nodeconfd/daemon/systemd"
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
}

func (f *fakeOS) Name() string { return "fake-os" }
func (f *fakeOS) Supports(image, kargs bool) error {
	return f.supportsErr
}
func (f *fakeOS) Stage(_ context.Context, image string, removed, added []string) (string, error) {
	f.calls = append(f.calls, "stage "+image+" -"+strings.Join(removed, ",")+" +"+strings.Join(added, ","))
	if f.stageErr != nil {
		return "", f.stageErr
	}
	return "Staged OS image " + image, nil
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

func osRunner(cfgs osConfigs, h *host, units *systemd.Fake, w *writes, osu phases.OSUpdater, rec *progress.Record, conds []metav1.Condition) *phases.Runner {
	env := phases.Env{Configs: cfgs, Cluster: &cluster{}, Host: h, Units: units, Policy: plan.DefaultPolicy()}
	if osu != nil {
		env.OS = osu
	}
	if conds == nil {
		conds = status.Initial(metav1.Now())
	}
	r := &phases.Runner{Env: env, Status: w, Log: zap.NewNop(), Now: time.Now, Phases: phases.All(), Record: rec, Conditions: conds}
	r.Start("n1")
	if len(rec.Steps) == 0 {
		r.Detected()
	} else {
		r.Replay()
	}
	return r
}

// A failed stage rolls back the files of the same update.
func TestOSStageFailureRollsBack(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	units, w := &systemd.Fake{}, &writes{}
	osu := &fakeOS{stageErr: errors.New("pull failed"), booted: phases.BootedOS{Image: "os:1"}}
	cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", file("/etc/a", "1"), "os:2", "nosmt")}
	r := osRunner(cfgs, h, units, w, osu, progress.New("a", "b"), nil)
	err := r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "staging the OS update with fake-os: pull failed (rolled back this update's writes)") {
		t.Fatalf("Run: %v", err)
	}
	if !h.rolled || len(h.files) != 0 || !reflect.DeepEqual(h.written, []string{"/etc/a"}) {
		t.Errorf("written %v, left %v, rolled back %v", h.written, h.files, h.rolled)
	}
	if want := []string{"stage os:2 - +nosmt"}; !reflect.DeepEqual(osu.calls, want) {
		t.Errorf("OS calls %q, want %q", osu.calls, want)
	}
}

// With no updater an OS change is refused in prepare: nothing written.
func TestOSChangeRefusedWithoutUpdater(t *testing.T) {
	for _, tc := range []struct {
		name string
		osu  phases.OSUpdater
		msg  string
	}{
		{"none", nil, "Error: OS image changes need rpm-ostree or bootc; this node has neither"},
		{"unsupported", &fakeOS{supportsErr: errors.New("no kargs here"), booted: phases.BootedOS{Image: "os:1"}},
			"Error: this node's OS updater fake-os cannot make the change: no kargs here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			w := &writes{}
			cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", file("/etc/a", "1"), "os:1", "nosmt")}
			r := osRunner(cfgs, h, &systemd.Fake{}, w, tc.osu, progress.New("a", "b"), nil)
			err := r.Run(context.Background())
			var us *phases.UnsupportedError
			if !errors.As(err, &us) {
				t.Fatalf("Run: %v, want an UnsupportedError", err)
			}
			if err := r.Fail(context.Background(), err); err != nil {
				t.Fatal(err)
			}
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
	units, w := &systemd.Fake{}, &writes{}
	osu := &fakeOS{booted: phases.BootedOS{Image: "os:1"}}
	cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", empty, "os:2")}
	r := osRunner(cfgs, h, units, w, osu, progress.New("a", "b"), nil)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	// The boot fell back: os:1 is still booted.
	for retry := 0; retry < 3; retry++ {
		rec, err := progress.Unmarshal(h.state[progress.FileName])
		if err != nil {
			t.Fatal(err)
		}
		r2 := osRunner(cfgs, h, units, w, osu, rec, w.last)
		if err := r2.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		err = r2.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "booted OS image os:1, desired os:2") {
			t.Fatalf("retry %d: Run: %v", retry, err)
		}
		if err := r2.Fail(context.Background(), err); err != nil {
			t.Fatal(err)
		}
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
