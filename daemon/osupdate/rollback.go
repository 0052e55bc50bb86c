package osupdate

import (
	"context"
	"errors"
	"fmt"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Rollback queues the previous deployment with `rpm-ostree rollback`
// (which moves the rollback deployment first, so the next boot brings it
// up), unless a deployment other than the booted one boots next already
// and runs target: a resumed rollback must not swap back. It checks that
// the deployment that boots next then runs target.
func (u *RpmOstree) Rollback(ctx context.Context, target phases.OSTarget) (string, error) {
	queued, err := rpmNextIs(ctx, u.Run, target)
	if err != nil || queued {
		return "The previous OS deployment is queued for the next boot already", err
	}
	if _, err := u.Run.Run(ctx, NameRpmOstree, "rollback"); err != nil {
		return "", fmt.Errorf("queueing the previous deployment: %w", err)
	}
	if queued, err = rpmNextIs(ctx, u.Run, target); err != nil {
		return "", err
	}
	if !queued {
		return "", errors.New("after rpm-ostree rollback the deployment that boots next is not the previous config's")
	}
	return "Queued the previous OS deployment with rpm-ostree rollback", nil
}

// rpmNextIs reports whether the deployment that boots next is not the
// booted one and runs target's image and kernel arguments.
func rpmNextIs(ctx context.Context, run Runner, target phases.OSTarget) (bool, error) {
	st, err := rpmOstreeStatus(ctx, run)
	if err != nil {
		return false, err
	}
	_, bi, err := st.Booted()
	if err != nil || bi == 0 {
		return false, err
	}
	next := st.Deployments[0]
	if target.Image != "" && !plan.SameImage(next.Image(), target.Image) {
		return false, nil
	}
	kargs, err := deploymentKargs(ctx, run, 0)
	if err != nil {
		return false, err
	}
	return phases.BootedMismatch(phases.BootedOS{IsImage: true, KernelArgs: kargs}, "", target.KernelArgs, nil) == "", nil
}

// Rollback queues the rollback entry with `bootc rollback` (which also
// drops a staged entry), unless the rollback entry is queued already and
// runs target's image. Kernel arguments come with the entry.
func (u *Bootc) Rollback(ctx context.Context, target phases.OSTarget) (string, error) {
	queued, err := u.rollbackQueued(ctx, target)
	if err != nil || queued {
		return "The previous OS deployment is queued for the next boot already", err
	}
	if _, err := u.Run.Run(ctx, NameBootc, "rollback"); err != nil {
		return "", fmt.Errorf("queueing the rollback deployment: %w", err)
	}
	if queued, err = u.rollbackQueued(ctx, target); err != nil {
		return "", err
	}
	if !queued {
		return "", errors.New("after bootc rollback the entry that boots next is not the previous config's")
	}
	return "Queued the previous OS deployment with bootc rollback", nil
}

func (u *Bootc) rollbackQueued(ctx context.Context, target phases.OSTarget) (bool, error) {
	host, err := bootcStatus(ctx, u.Run)
	if err != nil {
		return false, err
	}
	next, booted := host.Next()
	if booted || next == nil || host.Status.Staged != nil {
		return false, nil
	}
	if target.Image == "" || next.Image == nil {
		return target.Image == "", nil
	}
	return plan.SameImage(next.Image.Image.Ref().String(), target.Image), nil
}
