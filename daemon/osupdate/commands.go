package osupdate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// RebaseArgs is the rpm-ostree command line that stages image. "--" ends
// the options (rpm-ostree parses them with GLib's GOption, which takes it
// so), so no reference can be read as one.
func RebaseArgs(image string) ([]string, error) {
	r, err := plan.ParseImage(image)
	if err != nil {
		return nil, err
	}
	return []string{"rebase", "--experimental", "--", r.String()}, nil
}

// KargsArgs is the one rpm-ostree command line that removes and adds kernel
// arguments, in order, duplicates kept; nil when there is nothing to do.
// Each argument is the value of an --opt=value option, never a positional
// argument, so it needs no "--".
func KargsArgs(removed, added []string) []string {
	if len(removed)+len(added) == 0 {
		return nil
	}
	args := []string{"kargs"}
	for _, k := range removed {
		args = append(args, "--delete-if-present="+k)
	}
	for _, k := range added {
		args = append(args, "--append="+k)
	}
	return args
}

// SwitchArgs is the bootc command line that stages image. bootc verifies
// signatures through the containers policy only, so ostree remote
// verification is refused. "--" ends the options (bootc's clap parser
// takes it so), so no image name can be read as one.
func SwitchArgs(image string) ([]string, error) {
	r, err := plan.ParseImage(image)
	if err != nil {
		return nil, err
	}
	args := []string{"switch"}
	switch r.Verify {
	case "remote":
		return nil, fmt.Errorf("image reference %q: bootc cannot verify images with an ostree remote (%s); use a registry image", image, r.Remote)
	case "signed":
		args = append(args, "--enforce-container-sigpolicy")
	}
	if r.Transport != "registry" {
		args = append(args, "--transport", r.Transport)
	}
	return append(args, "--", r.Name), nil
}

// DescribeKargs sums up a kernel argument change: "+a +b -c".
func DescribeKargs(removed, added []string) string {
	var parts []string
	for _, k := range added {
		parts = append(parts, "+"+k)
	}
	for _, k := range removed {
		parts = append(parts, "-"+k)
	}
	return strings.Join(parts, " ")
}

// rpm-ostree's package options, as machine-config-daemon passes them.
const (
	installArg   = "--install"
	uninstallArg = "--uninstall"
)

// RevertKernelArgs is the rpm-ostree command line that undoes a kernel
// swap, as machine-config-daemon runs it before an OS update or a kernel
// type change: the kernel packages' overrides reset and the kernel-rt-* or
// kernel-64k-* packages uninstalled. Nil when the deployment has no swap
// (both halves), so a hotfix override of the kernel alone is kept.
func RevertKernelArgs(requested, removals []string) []string {
	if plan.KernelTypeOf(requested, removals) == plan.KernelDefault {
		return nil
	}
	args := []string{"override", "reset"}
	for _, r := range removals {
		if r == "kernel" || strings.HasPrefix(r, "kernel-") {
			args = append(args, r)
		}
	}
	for _, p := range requested {
		if strings.HasPrefix(p, "kernel-rt-") || strings.HasPrefix(p, "kernel-64k-") {
			args = append(args, uninstallArg, p)
		}
	}
	return args
}

// SwitchKernelArgs is the rpm-ostree command line that swaps the default
// kernel for kernelType's, as machine-config-daemon runs it; nil for the
// default kernel (reverting the swap is the way back).
func SwitchKernelArgs(kernelType string) []string {
	if plan.CanonicalKernelType(kernelType) == plan.KernelDefault {
		return nil
	}
	args := append([]string{"override", "remove"}, plan.KernelPackages(plan.KernelDefault)...)
	for _, p := range plan.KernelPackages(kernelType) {
		args = append(args, installArg, p)
	}
	return args
}

// ExtensionArgs is the rpm-ostree command line that layers extensions'
// packages on a deployment whose layered packages are requested, as
// machine-config-daemon runs it: `update`, an --install for each package
// the extensions need that is not layered, an --uninstall for each layered
// extension package none of them needs, sorted. Nil when there is nothing
// to do. Packages no extension layers are left alone.
func ExtensionArgs(requested, extensions []string) []string {
	want, have := plan.ExtensionPackages(extensions), plan.LayeredExtensions(requested)
	var args []string
	for _, p := range want {
		if !slices.Contains(requested, p) {
			args = append(args, installArg, p)
		}
	}
	for _, p := range have {
		if !slices.Contains(want, p) {
			args = append(args, uninstallArg, p)
		}
	}
	if args == nil {
		return nil
	}
	return append([]string{"update"}, args...)
}
