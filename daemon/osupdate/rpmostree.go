package osupdate

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// RpmOstree stages changes with rpm-ostree.
type RpmOstree struct {
	Run   Runner
	Retry Retry
}

var _ phases.OSUpdater = (*RpmOstree)(nil)

// Name is "rpm-ostree".
func (u *RpmOstree) Name() string { return NameRpmOstree }

// Supports: rpm-ostree makes every OS change.
func (u *RpmOstree) Supports(imageChanged, kargsChanged bool) error { return nil }

// Stage rebases to image (unless the pending deployment has it) and makes
// the kernel argument changes in one kargs call.
func (u *RpmOstree) Stage(ctx context.Context, image string, removed, added []string) (string, error) {
	st, err := rpmOstreeStatus(ctx, u.Run)
	if err != nil {
		return "", err
	}
	var done []string
	if image != "" {
		msg, err := u.rebase(ctx, st, image)
		if err != nil {
			return "", err
		}
		done = append(done, msg)
	}
	if len(removed)+len(added) > 0 {
		msg, err := stageKargs(ctx, u.Run, removed, added)
		if err != nil {
			return "", err
		}
		done = append(done, msg)
	}
	return strings.Join(done, "; "), nil
}

func (u *RpmOstree) rebase(ctx context.Context, st RpmOstreeStatus, image string) (string, error) {
	if SameImage(st.Deployments[0].Image(), image) {
		return "OS image " + image + " already staged", nil
	}
	args, err := RebaseArgs(image)
	if err != nil {
		return "", err
	}
	err = u.Retry.do(ctx, func() error {
		_, err := u.Run.Run(ctx, NameRpmOstree, args...)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("pulling OS image %s: %w", image, err)
	}
	return "Staged OS image " + image, nil
}

// Booted reads the booted deployment and its kernel arguments.
func (u *RpmOstree) Booted(ctx context.Context, image string) (phases.BootedOS, error) {
	st, err := rpmOstreeStatus(ctx, u.Run)
	if err != nil {
		return phases.BootedOS{}, err
	}
	d, i, err := st.Booted()
	if err != nil {
		return phases.BootedOS{}, err
	}
	kargs, err := deploymentKargs(ctx, u.Run, i)
	if err != nil {
		return phases.BootedOS{}, err
	}
	return phases.BootedOS{Image: d.Image(), IsImage: image == "" || SameImage(d.Image(), image), KernelArgs: kargs}, nil
}

// Cleanup removes the rollback deployment.
func (u *RpmOstree) Cleanup(ctx context.Context) (string, error) {
	if _, err := u.Run.Run(ctx, NameRpmOstree, "cleanup", "-r"); err != nil {
		return "", fmt.Errorf("removing the rollback deployment: %w", err)
	}
	return "removed the rollback deployment", nil
}

func rpmOstreeStatus(ctx context.Context, run Runner) (RpmOstreeStatus, error) {
	out, err := run.Run(ctx, NameRpmOstree, "status", "--json")
	if err != nil {
		return RpmOstreeStatus{}, fmt.Errorf("reading the rpm-ostree status: %w", err)
	}
	return ParseRpmOstreeStatus(out)
}

// deploymentKargs reads the kernel arguments of deployment i.
func deploymentKargs(ctx context.Context, run Runner, i int) ([]string, error) {
	out, err := run.Run(ctx, NameRpmOstree, "kargs", "--deploy-index="+strconv.Itoa(i))
	if err != nil {
		return nil, fmt.Errorf("reading the kernel arguments of deployment %d: %w", i, err)
	}
	args, ok := plan.SplitKernelArgs(string(out))
	if !ok {
		return nil, fmt.Errorf("reading the kernel arguments of deployment %d: unbalanced quote in %q", i, cut(string(out), 200))
	}
	return args, nil
}

// stageKargs makes the kernel argument changes in one kargs call, unless
// the pending deployment already has them (a resumed update).
func stageKargs(ctx context.Context, run Runner, removed, added []string) (string, error) {
	st, err := rpmOstreeStatus(ctx, run)
	if err != nil {
		return "", err
	}
	_, bi, err := st.Booted()
	if err != nil {
		return "", err
	}
	what := "kernel arguments " + DescribeKargs(removed, added)
	if bi > 0 {
		booted, err := deploymentKargs(ctx, run, bi)
		if err != nil {
			return "", err
		}
		pending, err := deploymentKargs(ctx, run, 0)
		if err != nil {
			return "", err
		}
		if SameKargs(pending, ApplyKargs(booted, removed, added)) && !SameKargs(pending, booted) {
			return what + " already staged", nil
		}
	}
	if _, err := run.Run(ctx, NameRpmOstree, KargsArgs(removed, added)...); err != nil {
		return "", fmt.Errorf("staging %s: %w", what, err)
	}
	return what, nil
}

// ApplyKargs is args after rpm-ostree's --delete-if-present of each removed
// argument (the first equal one, or the only one with that key) and
// --append of each added one.
func ApplyKargs(args, removed, added []string) []string {
	out := append([]string(nil), args...)
	for _, r := range removed {
		i := indexKarg(out, r)
		if i >= 0 {
			out = append(out[:i], out[i+1:]...)
		}
	}
	return append(out, added...)
}

func indexKarg(args []string, a string) int {
	for i, x := range args {
		if x == a {
			return i
		}
	}
	if strings.Contains(a, "=") {
		return -1
	}
	found := -1
	for i, x := range args {
		if k, _, _ := strings.Cut(x, "="); k == a {
			if found >= 0 {
				return -1 // several values: rpm-ostree needs key=value
			}
			found = i
		}
	}
	return found
}

// SameKargs reports whether a and b hold the same arguments, as multisets.
func SameKargs(a, b []string) bool {
	return len(a) == len(b) && len(plan.MultisetMinus(a, b)) == 0
}
