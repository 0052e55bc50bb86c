package osupdate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases"
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

// Supports refuses kernel argument changes when rpm-ostree is missing.
func (u *Bootc) Supports(imageChanged, kargsChanged bool) error {
	if kargsChanged && !u.Run.Has(NameRpmOstree) {
		return errors.New("kernel argument changes on a bootc host need rpm-ostree, which is not installed; bootc takes kernel arguments from the image (/usr/lib/bootc/kargs.d)")
	}
	return nil
}

// Stage switches to image (unless it is staged, or booted with nothing
// staged) and makes the kernel argument changes through rpm-ostree.
func (u *Bootc) Stage(ctx context.Context, image string, removed, added []string) (string, error) {
	var done []string
	if image != "" {
		msg, err := u.switchTo(ctx, image)
		if err != nil {
			return "", err
		}
		done = append(done, msg)
	}
	if len(removed)+len(added) > 0 {
		if err := u.Supports(false, true); err != nil {
			return "", err
		}
		msg, err := stageKargs(ctx, u.Run, removed, added)
		if err != nil {
			return "", err
		}
		done = append(done, msg)
	}
	return strings.Join(done, "; "), nil
}

func (u *Bootc) switchTo(ctx context.Context, image string) (string, error) {
	host, err := bootcStatus(ctx, u.Run)
	if err != nil {
		return "", err
	}
	next := host.Status.Staged
	if next == nil {
		next = host.Status.Booted
	}
	if next != nil && next.Image != nil && SameImage(next.Image.Image.Ref().String(), image) {
		return "OS image " + image + " already staged", nil
	}
	args, err := SwitchArgs(image)
	if err != nil {
		return "", err
	}
	err = u.Retry.do(ctx, func() error {
		_, err := u.Run.Run(ctx, NameBootc, args...)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("pulling OS image %s: %w", image, err)
	}
	return "Staged OS image " + image, nil
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
	b := phases.BootedOS{Image: ref, IsImage: image == "" || SameImage(ref, image)}
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
