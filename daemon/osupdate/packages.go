package osupdate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Extensions and the kernel type are staged as machine-config-daemon
// stages them (applyLayeredOSChanges): a kernel swap is undone before a
// rebase or a kernel type change (the kernel packages belong to an OS
// version), the image and kernel arguments are staged, then the kernel is
// swapped and the extensions' packages layered. Each step is computed from
// the deployment that boots next (rpm-ostree builds every change on it),
// not from the booted one after `cleanup -p` as upstream does, so a
// resumed Stage finds its earlier steps done and does not repeat them.

// supportsPackages refuses what rpm-ostree cannot do on this machine: the
// 64k-pages kernel exists for aarch64 only (upstream refuses it so too).
func (u *RpmOstree) supportsPackages(c phases.OSChange) error {
	arch := u.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	if c.PackagesChanged && plan.CanonicalKernelType(c.KernelType) == plan.Kernel64kPages && arch != "arm64" {
		return fmt.Errorf("the 64k-pages kernel is only supported on aarch64; this node is %s", arch)
	}
	return nil
}

// touchesPackages reports whether staging c may involve packages: they
// change, or the image changes under a kernel swap the rebase must redo.
func touchesPackages(c phases.OSChange) bool {
	return c.PackagesChanged || (c.Image != "" && plan.CanonicalKernelType(c.KernelType) != plan.KernelDefault)
}

// revertKernel undoes the next deployment's kernel swap when the image is
// about to change or the kernel type changes.
func (u *RpmOstree) revertKernel(ctx context.Context, c phases.OSChange, msg *stageMessage) error {
	if !touchesPackages(c) {
		return nil
	}
	next, err := u.next(ctx)
	if err != nil {
		return err
	}
	kt := plan.KernelTypeOf(next.RequestedPackages, next.RequestedBaseRemovals)
	rebasing := c.Image != "" && !plan.SameImage(next.Image(), c.Image)
	if kt == plan.KernelDefault || (!rebasing && kt == plan.CanonicalKernelType(c.KernelType)) {
		return nil
	}
	args := RevertKernelArgs(next.RequestedPackages, next.RequestedBaseRemovals)
	if _, err := u.Run.Run(ctx, NameRpmOstree, args...); err != nil {
		return fmt.Errorf("undoing the %s kernel swap: %w", kt, err)
	}
	msg.staged("a reset of the " + kt + " kernel swap")
	return nil
}

// stagePackages swaps the kernel and layers the extensions' packages on
// the deployment that boots next, then checks that it has them (upstream's
// verifyExtensionsStaged).
func (u *RpmOstree) stagePackages(ctx context.Context, c phases.OSChange, msg *stageMessage) error {
	if !touchesPackages(c) {
		return nil
	}
	kt := plan.CanonicalKernelType(c.KernelType)
	next, err := u.next(ctx)
	if err != nil {
		return err
	}
	if kt != plan.KernelDefault && plan.KernelTypeOf(next.RequestedPackages, next.RequestedBaseRemovals) != kt {
		if _, err := u.Run.Run(ctx, NameRpmOstree, SwitchKernelArgs(kt)...); err != nil {
			return fmt.Errorf("switching to the %s kernel: %w", kt, err)
		}
		msg.staged("the " + kt + " kernel")
		if next, err = u.next(ctx); err != nil {
			return err
		}
	}
	if args := ExtensionArgs(next.RequestedPackages, c.Extensions); args != nil {
		if _, err := u.Run.Run(ctx, NameRpmOstree, args...); err != nil {
			return fmt.Errorf("layering the extensions' packages: %w", err)
		}
		msg.staged("extension packages " + strings.Join(args[1:], " "))
		if next, err = u.next(ctx); err != nil {
			return err
		}
	}
	b := phases.BootedOS{Packages: orEmpty(next.RequestedPackages), RemovedPackages: next.RequestedBaseRemovals}
	if mismatch := phases.PackagesMismatch(b, plan.Config{Extensions: c.Extensions, KernelType: c.KernelType}); mismatch != "" {
		return errors.New("the deployment staged for the next boot does not have the desired packages: " + mismatch)
	}
	return nil
}

// next is the deployment that boots next: the pending one, else the booted one.
func (u *RpmOstree) next(ctx context.Context) (Deployment, error) {
	st, err := rpmOstreeStatus(ctx, u.Run)
	if err != nil {
		return Deployment{}, err
	}
	return st.Deployments[0], nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
