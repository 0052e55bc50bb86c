package osupdate

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

func TestExtensionArgs(t *testing.T) {
	tests := []struct {
		name            string
		requested, exts []string
		want            []string
	}{
		{"nothing", nil, nil, nil},
		{"install one", nil, []string{"sysstat"}, []string{"update", "--install", "sysstat"}},
		{"install several, sorted", nil, []string{"sysstat", "kerberos"},
			[]string{"update", "--install", "krb5-workstation", "--install", "libkadm5", "--install", "sysstat"}},
		{"already layered", []string{"sysstat"}, []string{"sysstat"}, nil},
		{"remove", []string{"sysstat", "usbguard"}, []string{"usbguard"}, []string{"update", "--uninstall", "sysstat"}},
		{"both", []string{"sysstat"}, []string{"usbguard"}, []string{"update", "--install", "usbguard", "--uninstall", "sysstat"}},
		// A package an administrator layered, and the kernel swap's, are not the extensions'.
		{"others left alone", []string{"vim", "kernel-rt-core"}, nil, nil},
	}
	for _, tt := range tests {
		if got := ExtensionArgs(tt.requested, tt.exts); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: ExtensionArgs = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestKernelArgsCommands(t *testing.T) {
	def := plan.KernelPackages(plan.KernelDefault)
	if got := SwitchKernelArgs(""); got != nil {
		t.Errorf("SwitchKernelArgs(default) = %q", got)
	}
	want := []string{"override", "remove", "kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra",
		"--install", "kernel-rt-core", "--install", "kernel-rt-modules", "--install", "kernel-rt-modules-extra"}
	if got := SwitchKernelArgs("realtime"); !reflect.DeepEqual(got, want) {
		t.Errorf("SwitchKernelArgs(realtime) = %q", got)
	}
	tests := []struct {
		name               string
		requested, removed []string
		want               []string
	}{
		{"no swap", []string{"usbguard"}, nil, nil},
		{"hotfix override kept", nil, []string{"kernel-core"}, nil},
		{"realtime", append([]string{"usbguard"}, plan.KernelPackages("realtime")...), def,
			append(append([]string{"override", "reset"}, def...), "--uninstall", "kernel-rt-core", "--uninstall", "kernel-rt-modules", "--uninstall", "kernel-rt-modules-extra")},
	}
	for _, tt := range tests {
		if got := RevertKernelArgs(tt.requested, tt.removed); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: RevertKernelArgs = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The fake rpm-ostree runs the commands machine-config-daemon runs: the
// kernel swap and the extensions staged, booted, then a rebase that redoes
// the swap, then the way back to the default kernel and no extensions.
func TestRpmOstreeExtensionsAndKernelType(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage, Kargs: []string{"rw"}})
	u := &RpmOstree{Run: tools, Retry: fastRetry, Arch: "amd64"}
	c := phases.OSChange{Extensions: []string{"usbguard", "sysstat"}, KernelType: "realtime", PackagesChanged: true}
	msg, err := u.Stage(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "realtime kernel") || !strings.Contains(msg, "--install sysstat --install usbguard") {
		t.Errorf("Stage message %q", msg)
	}
	var ran []string
	for _, call := range tools.calls(t, 0) {
		if !strings.Contains(call, "status") {
			ran = append(ran, call)
		}
	}
	want := []string{"rpm-ostree " + strings.Join(SwitchKernelArgs("realtime"), " "),
		"rpm-ostree update --install sysstat --install usbguard"}
	if !reflect.DeepEqual(ran, want) {
		t.Errorf("ran:\n got %q\nwant %q", ran, want)
	}
	cfg := plan.Config{Extensions: c.Extensions, KernelType: c.KernelType}
	if b, err := u.Booted(ctx, ""); err != nil || phases.PackagesMismatch(b, cfg) == "" {
		t.Errorf("before the boot: %+v, %v", b, err)
	}
	// A resumed Stage runs nothing again.
	n := len(tools.calls(t, 0))
	if _, err := u.Stage(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, call := range tools.calls(t, n) {
		if !strings.Contains(call, "status") {
			t.Errorf("second Stage ran %q", call)
		}
	}
	tools.boot(t)
	b, err := u.Booted(ctx, "")
	if err != nil || phases.PackagesMismatch(b, cfg) != "" {
		t.Fatalf("after the boot: %+v, %v: %s", b, err, phases.PackagesMismatch(b, cfg))
	}

	// A new image: the swap is undone first, the image staged (the
	// extensions carried along), the swap made again.
	n = len(tools.calls(t, 0))
	if _, err := u.Stage(ctx, phases.OSChange{Image: newImage, Extensions: c.Extensions, KernelType: "realtime"}); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, call := range tools.calls(t, n) {
		if f := strings.Fields(call); f[1] != "status" {
			verbs = append(verbs, f[1]+" "+f[2])
		}
	}
	if want := []string{"override reset", "rebase --experimental", "override remove"}; !reflect.DeepEqual(verbs, want) {
		t.Errorf("rebase under a swap ran %q, want %q", verbs, want)
	}
	tools.boot(t)
	if b, err := u.Booted(ctx, newImage); err != nil || !b.IsImage || phases.PackagesMismatch(b, cfg) != "" {
		t.Errorf("after the rebase: %+v, %v", b, err)
	}

	// Back to the default kernel and no extensions.
	if _, err := u.Stage(ctx, phases.OSChange{PackagesChanged: true}); err != nil {
		t.Fatal(err)
	}
	tools.boot(t)
	if b, err := u.Booted(ctx, ""); err != nil || len(b.Packages)+len(b.RemovedPackages) != 0 {
		t.Errorf("after going back: %+v, %v", b, err)
	}
}

// Packages the repositories lack fail the stage with rpm-ostree's error;
// the 64k-pages kernel is refused off aarch64; bootc refuses both fields.
func TestPackagesRefused(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage})
	if err := os.WriteFile(filepath.Join(tools.root, osfake.UnavailablePackagesFile), []byte("usbguard\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := &RpmOstree{Run: tools, Retry: fastRetry, Arch: "amd64"}
	_, err := u.Stage(ctx, phases.OSChange{Extensions: []string{"usbguard"}, PackagesChanged: true})
	if err == nil || !strings.Contains(err.Error(), "Packages not found: usbguard") {
		t.Errorf("Stage = %v", err)
	}
	if err := u.Supports(phases.OSChange{KernelType: "64k-pages", PackagesChanged: true}); err == nil || !strings.Contains(err.Error(), "aarch64") {
		t.Errorf("Supports(64k-pages on amd64) = %v", err)
	}
	if err := (&RpmOstree{Arch: "arm64"}).Supports(phases.OSChange{KernelType: "64k-pages", PackagesChanged: true}); err != nil {
		t.Errorf("Supports(64k-pages on arm64) = %v", err)
	}
	if err := (&Bootc{Run: tools}).Supports(phases.OSChange{Extensions: []string{"usbguard"}, PackagesChanged: true}); err == nil || !strings.Contains(err.Error(), "image") {
		t.Errorf("bootc Supports(extensions) = %v", err)
	}
}
