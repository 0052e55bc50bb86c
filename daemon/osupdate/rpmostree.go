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
	// Arch is the node's architecture as Go names it; "" is the daemon's.
	Arch string
}

var _ phases.OSUpdater = (*RpmOstree)(nil)

// Name is "rpm-ostree".
func (u *RpmOstree) Name() string { return NameRpmOstree }

// Supports: rpm-ostree makes every OS change of an image it can parse,
// but for a kernel this machine cannot run.
func (u *RpmOstree) Supports(c phases.OSChange) error {
	if c.Image != "" {
		if _, err := RebaseArgs(c.Image); err != nil {
			return err
		}
	}
	return u.supportsPackages(c)
}

// Stage undoes a kernel swap when it must (packages.go), rebases to the
// image (unless the deployment that boots next has it), makes the kernel
// argument changes in one kargs call (unless that deployment has them),
// then swaps the kernel and layers the extensions' packages.
func (u *RpmOstree) Stage(ctx context.Context, c phases.OSChange) (string, error) {
	var msg stageMessage
	if err := u.supportsPackages(c); err != nil {
		return "", err
	}
	if err := u.revertKernel(ctx, c, &msg); err != nil {
		return "", err
	}
	if c.Image != "" {
		st, err := rpmOstreeStatus(ctx, u.Run)
		if err != nil {
			return "", err
		}
		if err := u.rebase(ctx, st, c.Image, &msg); err != nil {
			return "", err
		}
	}
	if len(c.Removed)+len(c.Added) > 0 {
		if err := stageKargs(ctx, u.Run, c, &msg); err != nil {
			return "", err
		}
	}
	if err := u.stagePackages(ctx, c, &msg); err != nil {
		return "", err
	}
	return msg.String(), nil
}

func (u *RpmOstree) rebase(ctx context.Context, st RpmOstreeStatus, image string, msg *stageMessage) error {
	if next := st.Deployments[0]; plan.SameImage(next.Image(), image) {
		msg.already("OS image "+image, next.Booted)
		return nil
	}
	args, err := RebaseArgs(image)
	if err != nil {
		return err
	}
	return u.Retry.pull(ctx, u.Run, NameRpmOstree, image, args, msg)
}

// Unstage removes the pending deployment (rpm-ostree cleanup -p) when
// there is one.
func (u *RpmOstree) Unstage(ctx context.Context) (string, error) {
	return unstage(ctx, u.Run)
}

func unstage(ctx context.Context, run Runner) (string, error) {
	st, err := rpmOstreeStatus(ctx, run)
	if err != nil {
		return "", err
	}
	_, bi, err := st.Booted()
	if err != nil {
		return "", err
	}
	if bi == 0 {
		return "", nil
	}
	if _, err := run.Run(ctx, NameRpmOstree, "cleanup", "-p"); err != nil {
		return "", fmt.Errorf("removing the pending deployment: %w", err)
	}
	return "removed the pending deployment " + st.Deployments[0].Image(), nil
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
	return phases.BootedOS{Image: d.Image(), IsImage: image == "" || plan.SameImage(d.Image(), image), KernelArgs: kargs,
		Packages: orEmpty(d.RequestedPackages), RemovedPackages: d.RequestedBaseRemovals}, nil
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

// deploymentKargs reads the kernel arguments of deployment i, less the
// ostree= argument ostree adds to each deployment's boot entry (it names
// the deployment, not the config).
func deploymentKargs(ctx context.Context, run Runner, i int) ([]string, error) {
	out, err := run.Run(ctx, NameRpmOstree, "kargs", "--deploy-index="+strconv.Itoa(i))
	if err != nil {
		return nil, fmt.Errorf("reading the kernel arguments of deployment %d: %w", i, err)
	}
	args, ok := plan.SplitKernelArgs(string(out))
	if !ok {
		return nil, fmt.Errorf("reading the kernel arguments of deployment %d: unbalanced quote in %q", i, cut(string(out), 200))
	}
	kargs := []string{}
	for _, a := range args {
		if k, _, _ := strings.Cut(a, "="); k != "ostree" {
			kargs = append(kargs, a)
		}
	}
	return kargs, nil
}

// stageKargs makes the kernel argument change in one kargs call, on the
// deployment that boots next (the pending one, else the booted one). When
// that deployment has the desired arguments already (a resumed update, a
// reboot before the write was recorded) nothing is done. The change is
// relative to the booted deployment; a pending one with other arguments
// (left by a fallback) gets the edit that makes it the same.
func stageKargs(ctx context.Context, run Runner, c phases.OSChange, msg *stageMessage) error {
	st, err := rpmOstreeStatus(ctx, run)
	if err != nil {
		return err
	}
	_, bi, err := st.Booted()
	if err != nil {
		return err
	}
	what := "kernel arguments " + DescribeKargs(c.Removed, c.Added)
	booted, err := deploymentKargs(ctx, run, bi)
	if err != nil {
		return err
	}
	next := booted
	if bi > 0 {
		if next, err = deploymentKargs(ctx, run, 0); err != nil {
			return err
		}
	}
	if phases.BootedMismatch(phases.BootedOS{IsImage: true, KernelArgs: next}, "", c.KernelArgs, c.Removed) == "" {
		msg.already(what, bi == 0)
		return nil
	}
	removed, added := c.Removed, c.Added
	if !SameKargs(next, booted) {
		goal := ApplyKargs(booted, c.Removed, c.Added)
		removed, added = plan.MultisetMinus(next, goal), plan.MultisetMinus(goal, next)
	}
	if _, err := run.Run(ctx, NameRpmOstree, KargsArgs(removed, added)...); err != nil {
		return fmt.Errorf("staging %s: %w", what, err)
	}
	msg.staged(what)
	return nil
}

// stageMessage sums up a Stage: "Staged OS image x; kernel arguments +a",
// then what was there already.
type stageMessage struct{ done, there []string }

func (m *stageMessage) staged(what string) { m.done = append(m.done, what) }

func (m *stageMessage) already(what string, booted bool) {
	if booted {
		m.there = append(m.there, what+" already booted")
	} else {
		m.there = append(m.there, what+" already staged")
	}
}

func (m *stageMessage) String() string {
	var parts []string
	if len(m.done) > 0 {
		parts = append(parts, "Staged "+strings.Join(m.done, "; "))
	}
	parts = append(parts, m.there...)
	s := strings.Join(parts, "; ")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
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
