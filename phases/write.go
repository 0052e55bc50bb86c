package phases

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// Write applies files, units, SSH keys and OS changes. A failure rolls back
// what this update already wrote, in reverse order, before it is reported.
func Write() Step {
	return Step{
		Name: progress.StepWrite, Show: Show{Condition: status.AppliedFilesAndOS, Starting: "Writing files, units, SSH keys and OS changes"},
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			u := d.Update()
			if err := markWriteStarted(ctx, d); err != nil {
				return Outcome{}, err
			}
			txn, err := d.Ports().Host.BeginTxn(u.DesiredName)
			if err != nil {
				return Outcome{}, fmt.Errorf("starting the write of %s: %w", u.DesiredName, err)
			}
			msg, err := write(ctx, d, txn)
			if err != nil {
				if rbErr := txn.Rollback(); rbErr != nil {
					return Outcome{}, fmt.Errorf("%w; rolling back also failed: %v", err, rbErr)
				}
				if len(u.Diff.ChangedUnits)+len(u.Diff.RemovedUnits) > 0 {
					_ = d.Ports().Units.DaemonReload(ctx)
				}
				// A deployment staged before the failure (an image before
				// its kernel arguments) would come up at the next reboot.
				if u.Diff.OSChanged() {
					removed, usErr := d.Ports().OS.Unstage(ctx)
					if usErr != nil {
						return Outcome{}, fmt.Errorf("%w (rolled back this update's writes; removing the staged OS deployment failed: %v)", err, usErr)
					}
					if removed != "" {
						return Outcome{}, fmt.Errorf("%w (rolled back this update's writes; %s)", err, removed)
					}
				}
				return Outcome{}, fmt.Errorf("%w (rolled back this update's writes)", err)
			}
			// The step is recorded done before its journal is dropped: a
			// crash between the two leaves a journal the next start knows
			// to be committed, never a committed write the record does not
			// know of (a replacing update would then diff from the config
			// before it, and leave this one's files behind).
			d.Progress().Write.CreatedDirs = txn.CreatedDirs()
			d.Progress().MarkDone(progress.Step{Name: progress.StepWrite, Reason: status.Reason(status.AppliedFilesAndOS), Message: msg})
			if err := d.SaveProgress(); err != nil {
				return Outcome{}, fmt.Errorf("recording the write of %s: %w", u.DesiredName, err)
			}
			if err := txn.Commit(); err != nil {
				return Outcome{}, fmt.Errorf("committing the write of %s: %w", u.DesiredName, err)
			}
			return Outcome{Message: msg}, nil
		},
	}
}

// NotManagedMessage says, in the write's message, that a node with no OS
// updater leaves its OS fields alone.
const NotManagedMessage = "OS not managed on this node (no rpm-ostree or bootc): osImageURL, kernelArguments, extensions and kernelType left as they are"

func write(ctx context.Context, d Data, txn Txn) (string, error) {
	diff := d.Update().Diff
	if err := recordUnitStates(ctx, d.Ports().Units, txn, diff); err != nil {
		return "", err
	}
	if err := txn.WriteFiles(diff.ChangedFiles); err != nil {
		return "", fmt.Errorf("writing files: %w", err)
	}
	for _, p := range diff.RemovedFiles {
		if err := txn.RemoveFile(p); err != nil {
			return "", fmt.Errorf("removing %s: %w", p, err)
		}
	}
	if len(diff.RemovedUnits) > 0 {
		var names []string
		for _, u := range diff.RemovedUnits {
			names = append(names, u.Name)
		}
		names, err := found(ctx, d.Ports().Units, names)
		if err != nil {
			return "", err
		}
		if err := d.Ports().Units.Disable(ctx, names...); err != nil {
			return "", fmt.Errorf("disabling removed units: %w", err)
		}
	}
	for _, u := range diff.RemovedUnits {
		if err := txn.RemoveUnit(u); err != nil {
			return "", fmt.Errorf("removing unit %s: %w", u.Name, err)
		}
	}
	for _, u := range diff.ChangedUnits {
		if err := txn.WriteUnit(u); err != nil {
			return "", fmt.Errorf("writing unit %s: %w", u.Name, err)
		}
	}
	for _, k := range diff.SSHKeys {
		if err := txn.WriteSSHKeys(k.User, k.Keys); err != nil {
			return "", fmt.Errorf("writing SSH keys of user %s: %w", k.User, err)
		}
	}
	if diff.PasswordHashChanged {
		if err := txn.SetPasswordHash(d.Update().Desired.PasswordHash); err != nil {
			return "", fmt.Errorf("setting the password hash of user core: %w", err)
		}
	}
	if len(diff.ChangedUnits)+len(diff.RemovedUnits) > 0 {
		if err := d.Ports().Units.DaemonReload(ctx); err != nil {
			return "", fmt.Errorf("reloading systemd: %w", err)
		}
		if err := applyEnablement(ctx, d.Ports().Units, diff.ChangedUnits); err != nil {
			return "", err
		}
	}
	staged, err := writeOS(ctx, d)
	if err != nil {
		return "", err
	}
	parts := []string{plan.Plural(len(diff.ChangedFiles), "file")}
	if n := len(diff.RemovedFiles); n > 0 {
		parts = append(parts, plan.Plural(n, "file")+" removed")
	}
	if n := len(diff.ChangedUnits) + len(diff.RemovedUnits); n > 0 {
		parts = append(parts, plan.Plural(n, "unit"))
	}
	if diff.SSHKeysChanged() {
		parts = append(parts, "SSH keys")
	}
	if diff.PasswordHashChanged {
		parts = append(parts, "password hash")
	}
	if diff.OSNotManaged {
		return "Applied " + strings.Join(append(parts, NotManagedMessage), ", "), nil
	}
	if staged == "" {
		return "Applied " + strings.Join(append(parts, "OS unchanged"), ", "), nil
	}
	return "Applied " + strings.Join(parts, ", ") + ". " + staged, nil
}

// writeOS stages the update's OS change. An update with none removes a
// pending deployment it did not plan (left by a boot that fell back), which
// its reboot, or any later one, would otherwise bring up; one it cannot
// remove is reported in a Warning Event, and the update goes on.
func writeOS(ctx context.Context, d Data) (string, error) {
	u := d.Update()
	osu := d.Ports().OS
	if osu == nil {
		return "", nil
	}
	if !u.Diff.OSChanged() {
		removed, err := osu.Unstage(ctx)
		if err != nil {
			// Not this update's doing (bootc's own update timer, say), and
			// the check after a reboot reports a wrong booted image: say
			// so, and go on with the files.
			d.Warn("OSDeploymentPending", fmt.Sprintf("Could not remove a pending OS deployment of node %s with %s: %v",
				u.Node, osu.Name(), err))
			return "Left a pending OS deployment in place", nil
		}
		if removed != "" {
			removed = strings.ToUpper(removed[:1]) + removed[1:]
		}
		return removed, nil
	}
	staged, err := osu.Stage(ctx, NewOSChange(u.Desired, u.Diff))
	if err != nil {
		return "", fmt.Errorf("staging the OS update with %s: %w", osu.Name(), err)
	}
	return staged, nil
}

// applyEnablement enables, disables, masks and unmasks units as the config
// says, over D-Bus. A unit to disable that has no unit file is disabled
// already (see found); one to enable without a unit file was refused in
// prepare (Host.Preflight).
func applyEnablement(ctx context.Context, units Units, changed []plan.Unit) error {
	var enable, disable, mask, unmask []string
	for _, u := range changed {
		if u.Mask {
			mask = append(mask, u.Name)
			continue
		}
		unmask = append(unmask, u.Name)
		if u.Enabled != nil && *u.Enabled {
			enable = append(enable, u.Name)
		} else if u.Enabled != nil {
			disable = append(disable, u.Name)
		}
	}
	disable, err := found(ctx, units, disable)
	if err != nil {
		return err
	}
	steps := []struct {
		what  string
		units []string
		do    func(context.Context, ...string) error
	}{
		{"unmasking", unmask, units.Unmask},
		{"masking", mask, units.Mask},
		{"enabling", enable, units.Enable},
		{"disabling", disable, units.Disable},
	}
	var errs []error
	for _, s := range steps {
		if len(s.units) == 0 {
			continue
		}
		if err := s.do(ctx, s.units...); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", s.what, strings.Join(s.units, ", "), err))
		}
	}
	return errors.Join(errs...)
}

// found drops the units systemd has no unit file for (is-enabled reads
// "not-found"): they are disabled already as systemd sees them, and there
// is nothing to disable.
func found(ctx context.Context, units Units, names []string) ([]string, error) {
	var out []string
	for _, name := range names {
		state, err := units.IsEnabled(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("unit %s: reading its enablement: %w", name, err)
		}
		if state != "not-found" {
			out = append(out, name)
		}
	}
	return out, nil
}
