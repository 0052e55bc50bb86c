package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// A change of extensions or kernel type the node's updater cannot make
// (bootc) is refused in prepare, naming the field: nothing is written,
// nothing rebooted, and the status never says done.
func TestExtensionsAndKernelTypeRefused(t *testing.T) {
	refuse := errors.New("bootc takes extensions and the kernel from the OS image only")
	for _, tc := range []struct {
		name, kt, field string
		ext             []string
	}{
		{name: "extensions", ext: []string{"usbguard"}, field: "spec.extensions"},
		{name: "kernel type", kt: "realtime", field: "spec.kernelType"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			w, units := &writes{}, &systemdtest.Fake{}
			osu := &fakeOS{booted: phases.BootedOS{Image: "os:1"}, supportsErr: refuse}
			b := osMC("b", file("/etc/a", "1"), "")
			b.Spec.Extensions, b.Spec.KernelType = tc.ext, tc.kt
			cfgs := osConfigs{"a": osMC("a", empty, ""), "b": b}
			r := osRunner(cfgs, h, units, w, osu, progress.New("a", "b"), nil)
			err := r.Run(context.Background())
			var us *phases.UnsupportedError
			if !errors.As(err, &us) || us.Field != tc.field {
				t.Fatalf("Run: %v, want an UnsupportedError naming %s", err, tc.field)
			}
			r.Fail(context.Background(), err)
			want := `Error: MachineConfig "b": ` + tc.field + ": this node's OS updater fake-os cannot make the change: " + refuse.Error()
			if c := status.Find(w.last, status.UpdateCompatible); c.Status != metav1.ConditionFalse || c.Message != want {
				t.Errorf("UpdateCompatible = %s %q, want False %q", c.Status, c.Message, want)
			}
			if len(h.written) != 0 || r.Record.Done("write") || len(units.CallLog()) != 0 || len(osu.calls) > 1 {
				t.Errorf("written %v, systemd calls %v, OS calls %v", h.written, units.CallLog(), osu.calls)
			}
		})
	}
}

// On a node with no OS updater (a plain distribution) the OS fields are
// not managed, as machine-config-daemon leaves them on a node that is not
// CoreOS: the files are written, nothing is refused, and the status says
// the OS is not managed, never that it was applied.
func TestOSNotManagedWithoutUpdater(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	w, units := &writes{}, &systemdtest.Fake{}
	b := osMC("b", file("/etc/a", "1"), "os:2", "nosmt")
	b.Spec.Extensions, b.Spec.KernelType = []string{"usbguard"}, "realtime"
	cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": b}
	r := osRunner(cfgs, h, units, w, nil, progress.New("a", "b"), nil)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v (the file needs the reboot)", err)
	}
	if h.files["/etc/a"] != "1" {
		t.Errorf("files %v", h.files)
	}
	if c := status.Find(w.last, status.UpdateCompatible); !strings.Contains(c.Message, "OS not managed") || strings.Contains(c.Message, "OS image") {
		t.Errorf("UpdateCompatible = %q", c.Message)
	}
	c := status.Find(w.last, status.AppliedFilesAndOS)
	if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, phases.NotManagedMessage) || strings.Contains(c.Message, "OS unchanged") {
		t.Errorf("AppliedFilesAndOS = %s %q", c.Status, c.Message)
	}
	if r.Record.Prepare.OS == nil || r.Record.Prepare.OS.ImageChanged || r.Record.Prepare.OS.ExtensionsChanged || len(r.Record.Prepare.OS.KernelArgsAdded) > 0 {
		t.Errorf("saved OS plan %+v", r.Record.Prepare.OS)
	}
}
