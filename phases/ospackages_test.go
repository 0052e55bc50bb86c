package phases_test

import (
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

var rt = plan.KernelPackages(plan.KernelRealtime)

// The extensions and kernel type change exactly when the booted
// deployment's packages are not the desired ones (known packages only).
func TestPlanAgainstBootedPackages(t *testing.T) {
	tests := []struct {
		name             string
		b                phases.BootedOS
		desired          plan.Config
		wantExt, wantKer bool
	}{
		{"unknown packages keep the config diff", phases.BootedOS{IsImage: true}, plan.Config{Extensions: []string{"usbguard"}}, true, true},
		{"booted has them", phases.BootedOS{IsImage: true, Packages: append([]string{"usbguard"}, rt...), RemovedPackages: plan.KernelPackages("")},
			plan.Config{Extensions: []string{"usbguard"}, KernelType: "realtime"}, false, false},
		{"a fallback lost them", phases.BootedOS{IsImage: true, Packages: []string{}},
			plan.Config{Extensions: []string{"usbguard"}, KernelType: "realtime"}, true, true},
		{"hand-layered package is not an extension", phases.BootedOS{IsImage: true, Packages: []string{"vim"}}, plan.Config{}, false, false},
	}
	for _, tt := range tests {
		d := plan.Diff{ExtensionsChanged: true, KernelTypeChanged: true}
		phases.PlanAgainstBooted(tt.b, false, plan.Config{}, tt.desired, nil, &d)
		if d.ExtensionsChanged != tt.wantExt || d.KernelTypeChanged != tt.wantKer {
			t.Errorf("%s: extensions %v kernel type %v, want %v %v", tt.name, d.ExtensionsChanged, d.KernelTypeChanged, tt.wantExt, tt.wantKer)
		}
	}
}

func TestPackagesMismatch(t *testing.T) {
	cfg := plan.Config{Extensions: []string{"sysstat"}, KernelType: "realtime"}
	tests := []struct {
		b    phases.BootedOS
		want []string
	}{
		{phases.BootedOS{}, nil},
		{phases.BootedOS{Packages: append([]string{"sysstat"}, rt...), RemovedPackages: plan.KernelPackages("")}, nil},
		{phases.BootedOS{Packages: []string{"usbguard"}}, []string{"extension packages missing: sysstat",
			"extension packages no extension asks for: usbguard", "booted kernel type default, desired realtime"}},
	}
	for _, tt := range tests {
		got := phases.PackagesMismatch(tt.b, cfg)
		if want := strings.Join(tt.want, "; "); got != want {
			t.Errorf("PackagesMismatch(%+v) = %q, want %q", tt.b, got, want)
		}
	}
}
