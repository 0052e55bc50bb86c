package osupdate

import (
	"context"
	"errors"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Bootc stages images with bootc, and kernel arguments with rpm-ostree when
// it is installed (bootc takes them from the image only).
type Bootc struct {
	Run   Runner
	Retry Retry
}

var _ phases.OSUpdater = (*Bootc)(nil)

// Name is "bootc".
func (u *Bootc) Name() string { return NameBootc }

// Supports refuses images bootc cannot verify, kernel argument changes
// when rpm-ostree is missing, and extension and kernel type changes: bootc
// takes packages from the image only (layering them with rpm-ostree would
// leave a deployment bootc no longer updates).
func (u *Bootc) Supports(c phases.OSChange) error {
	if c.Image != "" {
		if _, err := SwitchArgs(c.Image); err != nil {
			return err
		}
	}
	if c.PackagesChanged {
		return errors.New("bootc takes extensions and the kernel from the OS image only: build them into the image (spec.osImageURL)")
	}
	if len(c.Removed)+len(c.Added) > 0 && !u.Run.Has(NameRpmOstree) {
		return errors.New("kernel argument changes on a bootc host need rpm-ostree, which is not installed; bootc takes kernel arguments from the image (/usr/lib/bootc/kargs.d)")
	}
	return nil
}

// Stage switches to the image (unless the entry that boots next has it)
// and makes the kernel argument changes through rpm-ostree.
func (u *Bootc) Stage(ctx context.Context, c phases.OSChange) (string, error) {
	var msg stageMessage
	if c.PackagesChanged {
		return "", u.Supports(phases.OSChange{PackagesChanged: true})
	}
	if c.Image != "" {
		if err := u.switchTo(ctx, c.Image, &msg); err != nil {
			return "", err
		}
	}
	if len(c.Removed)+len(c.Added) > 0 {
		if err := u.Supports(phases.OSChange{Removed: c.Removed, Added: c.Added}); err != nil {
			return "", err
		}
		if err := stageKargs(ctx, u.Run, c, &msg); err != nil {
			return "", err
		}
	}
	return msg.String(), nil
}

func (u *Bootc) switchTo(ctx context.Context, image string, msg *stageMessage) error {
	host, err := bootcStatus(ctx, u.Run)
	if err != nil {
		return err
	}
	next, booted := host.Next()
	if next != nil && next.Image != nil && plan.SameImage(next.Image.Image.Ref().String(), image) {
		msg.already("OS image "+image, booted)
		return nil
	}
	args, err := SwitchArgs(image)
	if err != nil {
		return err
	}
	return u.Retry.pull(ctx, u.Run, NameBootc, image, args, msg)
}

// Unstage removes the staged or queued entry through rpm-ostree (bootc has
// no command for it; `bootc rollback` would queue the rollback entry).
func (u *Bootc) Unstage(ctx context.Context) (string, error) {
	host, err := bootcStatus(ctx, u.Run)
	if err != nil {
		return "", err
	}
	if next, booted := host.Next(); next == nil || booted {
		return "", nil
	}
	if !u.Run.Has(NameRpmOstree) {
		return "", errors.New("bootc cannot remove a staged or queued deployment and rpm-ostree is not installed; remove it by hand (ostree admin undeploy)")
	}
	return unstage(ctx, u.Run)
}

// Booted reads the booted image, and the kernel arguments when rpm-ostree
// can tell them.
func (u *Bootc) Booted(ctx context.Context, image string) (phases.BootedOS, error) {
	host, err := bootcStatus(ctx, u.Run)
	if err != nil {
		return phases.BootedOS{}, err
	}
	if !host.BootedFromImage() {
		return phases.BootedOS{}, errors.New("bootc status shows no booted image")
	}
	ref := host.Status.Booted.Image.Image.Ref().String()
	b := phases.BootedOS{Image: ref, IsImage: image == "" || plan.SameImage(ref, image)}
	if u.Run.Has(NameRpmOstree) {
		st, err := rpmOstreeStatus(ctx, u.Run)
		if err != nil {
			return b, err
		}
		_, i, err := st.Booted()
		if err != nil {
			return b, err
		}
		if b.KernelArgs, err = deploymentKargs(ctx, u.Run, i); err != nil {
			return b, err
		}
	}
	return b, nil
}

// Cleanup keeps the rollback entry: bootc keeps exactly one, for `bootc
// rollback`.
func (u *Bootc) Cleanup(ctx context.Context) (string, error) {
	return "kept the rollback deployment for bootc rollback", nil
}
