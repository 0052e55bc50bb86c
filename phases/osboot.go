package phases

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// checkBootedOS compares, after the reboot of an update, the booted
// deployment with the desired image and kernel arguments. When the update
// staged an OS change, a mismatch means the bootloader fell back to the old
// deployment: an error naming both; a match cleans up (rpm-ostree drops
// the rollback deployment; a failed cleanup is reported, not fatal). When
// it staged none, the booted image must still be the desired one (a
// deployment left pending by an earlier fallback must not come up
// unnoticed).
func checkBootedOS(ctx context.Context, d Data) (string, error) {
	u := d.Update()
	osu := d.Ports().OS
	staged := u.Diff.OSChanged()
	if osu == nil || (!staged && u.Desired.OSImageURL == "") {
		return "", nil
	}
	image := u.Desired.OSImageURL
	b, err := osu.Booted(ctx, image)
	if err != nil {
		return "", fmt.Errorf("reading the booted OS with %s: %w", osu.Name(), err)
	}
	if !staged {
		if mismatch := join(BootedMismatch(b, image, u.Desired.KernelArguments, nil), PackagesMismatch(b, u.Desired)); mismatch != "" {
			return "", fmt.Errorf("the node booted the wrong OS deployment for %s: %s; this update staged no OS change. "+
				"Not rebooting again: waiting for an administrator or a new desired config", u.DesiredName, mismatch)
		}
		return "booted OS image " + b.Image + " as before", nil
	}
	if mismatch := join(BootedMismatch(b, image, u.Desired.KernelArguments, u.Diff.KernelArgsRemoved), PackagesMismatch(b, u.Desired)); mismatch != "" {
		return "", fmt.Errorf("the node booted the wrong OS deployment for %s: %s; the bootloader fell back to the previous deployment. "+
			"Not rebooting again: waiting for an administrator or a new desired config", u.DesiredName, mismatch)
	}
	msg := "booted OS image " + b.Image
	if image == "" {
		msg = "booted kernel arguments, extensions and kernel type as desired"
	}
	if gate, _ := gateNeeded(d); gate {
		// The health gate's rollback needs it; the gate cleans up once passed.
		return msg + "; kept the rollback deployment for the health gate", nil
	}
	done, err := osu.Cleanup(ctx)
	if err != nil {
		return msg + "; cleanup failed: " + err.Error(), nil
	}
	return msg + "; " + done, nil
}

// CheckOS checks that the booted deployment runs cfg's image and kernel
// arguments (when the updater can read them); nil with no updater.
func CheckOS(ctx context.Context, osu OSUpdater, cfg plan.Config) error {
	if osu == nil {
		return nil
	}
	b, err := osu.Booted(ctx, cfg.OSImageURL)
	if err != nil {
		return fmt.Errorf("reading the booted OS with %s: %w", osu.Name(), err)
	}
	if mismatch := join(BootedMismatch(b, cfg.OSImageURL, cfg.KernelArguments, nil), PackagesMismatch(b, cfg)); mismatch != "" {
		return errors.New(mismatch)
	}
	return nil
}

// PackagesMismatch says how the booted deployment's extension packages and
// kernel type differ from cfg's, or "" when they do not or b's packages
// are unknown. Only the packages extensions manage count: one an
// administrator layered by hand is not the config's.
func PackagesMismatch(b BootedOS, cfg plan.Config) string {
	if b.Packages == nil {
		return ""
	}
	var out []string
	want, have := plan.ExtensionPackages(cfg.Extensions), plan.LayeredExtensions(b.Packages)
	if missing := plan.MultisetMinus(want, have); len(missing) > 0 {
		out = append(out, "extension packages missing: "+strings.Join(missing, " "))
	}
	if extra := plan.MultisetMinus(have, want); len(extra) > 0 {
		out = append(out, "extension packages no extension asks for: "+strings.Join(extra, " "))
	}
	if kt, want := plan.KernelTypeOf(b.Packages, b.RemovedPackages), plan.CanonicalKernelType(cfg.KernelType); kt != want {
		out = append(out, fmt.Sprintf("booted kernel type %s, desired %s", kt, want))
	}
	return strings.Join(out, "; ")
}

// join joins the non-empty parts with "; ".
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// BootedMismatch says how the booted deployment differs from the desired
// image and kernel arguments, or "" when it does not. Every desired
// argument must be booted (duplicates count), and a removed one may be
// booted only as often as the config still has it.
func BootedMismatch(b BootedOS, image string, kargs, removed []string) string {
	var out []string
	if !b.IsImage {
		out = append(out, fmt.Sprintf("booted OS image %s, desired %s", b.Image, image))
	}
	if b.KernelArgs != nil {
		if missing := plan.MultisetMinus(kargs, b.KernelArgs); len(missing) > 0 {
			out = append(out, "kernel arguments missing: "+strings.Join(missing, " "))
		}
		var extra []string
		for _, r := range dedupe(removed) {
			if count(b.KernelArgs, r) > count(kargs, r) {
				extra = append(extra, r)
			}
		}
		if len(extra) > 0 {
			out = append(out, "removed kernel arguments still booted: "+strings.Join(extra, " "))
		}
	}
	return strings.Join(out, "; ")
}

func count(s []string, x string) int {
	n := 0
	for _, v := range s {
		if v == x {
			n++
		}
	}
	return n
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
