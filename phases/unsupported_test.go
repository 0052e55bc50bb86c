package phases_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// A change of extensions or kernel type is refused in prepare, naming the
// field, with or without an OS updater: nothing is written, nothing
// rebooted, and the status never says done.
func TestExtensionsAndKernelTypeRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		osu  phases.OSUpdater
		ext  []string
		kt   string
		msg  string
	}{
		{name: "extensions, no updater", ext: []string{"usbguard"},
			msg: `Error: MachineConfig "b": spec.extensions: changing the OS extensions is not supported on this host: build them into the OS image (spec.osImageURL) instead`},
		{name: "extensions, rpm-ostree", osu: &fakeOS{booted: phases.BootedOS{Image: "os:1"}}, ext: []string{"kerberos"},
			msg: `Error: MachineConfig "b": spec.extensions: changing the OS extensions is not supported on this host: build them into the OS image (spec.osImageURL) instead`},
		{name: "kernel type", osu: &fakeOS{booted: phases.BootedOS{Image: "os:1"}}, kt: "realtime",
			msg: `Error: MachineConfig "b": spec.kernelType: changing the kernel type is not supported on this host: use an OS image with the kernel you want (spec.osImageURL) instead`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			w, units := &writes{}, &systemdtest.Fake{}
			b := osMC("b", file("/etc/a", "1"), "")
			b.Spec.Extensions, b.Spec.KernelType = tc.ext, tc.kt
			cfgs := osConfigs{"a": osMC("a", empty, ""), "b": b}
			r := osRunner(cfgs, h, units, w, tc.osu, progress.New("a", "b"), nil)
			err := r.Run(context.Background())
			var us *phases.UnsupportedError
			if !errors.As(err, &us) {
				t.Fatalf("Run: %v, want an UnsupportedError", err)
			}
			r.Fail(context.Background(), err)
			if c := status.Find(w.last, status.UpdateCompatible); c.Status != metav1.ConditionFalse || c.Message != tc.msg {
				t.Errorf("UpdateCompatible = %s %q, want False %q", c.Status, c.Message, tc.msg)
			}
			if c := status.Find(w.last, status.Updated); c != nil && c.Status == metav1.ConditionTrue {
				t.Errorf("Updated = True after a refused change")
			}
			if len(h.written) != 0 || r.Record.Done("write") || len(units.CallLog()) != 0 {
				t.Errorf("written %v, systemd calls %v", h.written, units.CallLog())
			}
		})
	}
}
