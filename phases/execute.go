package phases

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

func needsDrain(d Data) (bool, string) {
	a := d.Update().Action
	if a.NeedsDrain() {
		return true, ""
	}
	return false, fmt.Sprintf("Post action %s needs no drain", a.Kind)
}

// Cordon marks the node unschedulable before a disruptive post action and
// remembers whether this daemon did it, so the uncordon never undoes an
// administrator's cordon. It first checks that the drain could start (pods
// without a controller fail the update here, with nothing cordoned and no
// slot taken), then waits for a cluster-wide disruption slot. When this
// daemon's cordon may already be on the node (an earlier try was cut short
// before it was undone), the check is left to the drain, whose failure
// undoes the cordon: failing here would leave the node cordoned.
func Cordon() Phase {
	return Phase{
		Name: "cordon", Group: status.UpdateExecuted, Condition: status.Cordoned,
		Needed: func(d Data) (bool, string) {
			// A cordon inherited from a replaced update that had written its
			// files stays until this update's uncordon: the phase reports
			// it, so Cordoned never says False while the node is cordoned.
			if d.Progress().CordonedByUs {
				return true, ""
			}
			return needsDrain(d)
		},
		OnSuperseded: supersededCordon,
		Wait: func(ctx context.Context, d Data) error {
			if d.Progress().CordonedByUs {
				return holdSlot(ctx, d)
			}
			if err := d.Cluster().CheckDrain(ctx); err != nil {
				return fmt.Errorf("checking the pods of node %s before the cordon: %w", d.Update().Node, err)
			}
			return holdSlot(ctx, d)
		},
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			if !d.Update().Action.NeedsDrain() { // the inherited cordon (Needed)
				return Outcome{Message: "Node stays cordoned by the update this one replaced, until this update " +
					"completes"}, nil
			}
			// The intent first: a crash right after the cordon, before the
			// outcome is saved, must not lose the cordon (a new desired
			// config starts a new record that inherits CordonedByUs, and
			// its uncordon lifts only a cordon carrying this daemon's
			// annotation, so an administrator's cordon is safe either way).
			rec := d.Progress()
			if !rec.CordonedByUs {
				rec.CordonedByUs = true
				if err := d.SaveProgress(); err != nil {
					return Outcome{}, err
				}
			}
			cordoned, err := d.Cluster().Cordon(ctx)
			if err != nil {
				return Outcome{}, err
			}
			// Cordon reports the truth even after a restart (it finds its own
			// cordon by its annotation), so the record follows it.
			rec.CordonedByUs = cordoned
			if err := d.SaveProgress(); err != nil {
				return Outcome{}, err
			}
			if !rec.CordonedByUs {
				return Outcome{Message: "Node was already cordoned; it stays cordoned after the update"}, nil
			}
			return Outcome{Message: "Cordoned node " + d.Update().Node}, nil
		},
	}
}

// Drain evicts the node's pods. A drain that gives up at its timeout (the
// fail policy) or cannot go on (pods without a controller that arrived
// after the cordon's check) undoes the cordon, so the node is not left
// cordoned by an update that cannot go on, and the retry starts again from
// the cordon. A drain interrupted for shutdown stops with ErrStopped and
// runs again at the next start. A new desired config (a rollback) stops a
// drain: the cordon is undone and the slot given back (supersededCordon),
// and the daemon takes up the new config.
func Drain() Phase {
	return Phase{
		Name: "drain", Group: status.UpdateExecuted, Condition: status.Drained, Needed: needsDrain,
		Wait: holdSlot, OnSuperseded: supersededCordon,
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			dctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var superseded atomic.Bool
			go func() {
				select {
				case <-d.Interrupted():
					cancel()
				case <-d.Superseded():
					superseded.Store(true)
					cancel()
				case <-dctx.Done():
				}
			}()
			res, err := d.Cluster().Drain(dctx, drainProgress{ctx: ctx, d: d})
			if err != nil && dctx.Err() != nil && ctx.Err() == nil {
				if superseded.Load() {
					if err := supersededCordon(ctx, d); err != nil {
						return Outcome{}, err
					}
					return Outcome{}, ErrSuperseded
				}
				return Outcome{}, ErrStopped
			}
			if errors.Is(err, ErrDrainTimedOut) || errors.Is(err, ErrCannotDrain) {
				return Outcome{}, undoCordon(ctx, d, err)
			}
			if err != nil {
				return Outcome{}, fmt.Errorf("draining node %s: %w", d.Update().Node, err)
			}
			return Outcome{Message: drainedMessage(res)}, nil
		},
	}
}

// drainProgress shows a running drain in the Drained condition, and a drain
// blocked past its timeout in a Warning Event too.
type drainProgress struct {
	ctx context.Context
	d   Data
}

func (p drainProgress) Progress(msg string) { _ = p.d.Report(p.ctx, msg) }

func (p drainProgress) Blocked(msg string) {
	_ = p.d.Report(p.ctx, msg)
	p.d.Warn("DrainBlocked", "Drain of node "+p.d.Update().Node+" is blocked: "+msg)
}

func drainedMessage(res DrainResult) string {
	msg := "Drained node: evicted " + plural(res.Evicted, "pod")
	if res.Skipped > 0 {
		msg += fmt.Sprintf(", left %s of DaemonSets or static pods in place", plural(res.Skipped, "pod"))
	}
	if res.Blocked > 0 {
		msg += fmt.Sprintf("; evictions were refused for %s", res.Blocked.Round(time.Second))
	}
	return msg
}

// undoCordon is the end of a drain that gave up: giveBack undoes the
// cordon and returns the slot, and the drain's error is reported with what
// was done.
func undoCordon(ctx context.Context, d Data, drainErr error) error {
	why := "the drain timed out"
	if !errors.Is(drainErr, ErrDrainTimedOut) {
		why = "the drain could not go on"
	}
	outcome, err := giveBack(ctx, d, "Uncordoned after "+why+"; the retry cordons again")
	if err != nil {
		return fmt.Errorf("draining node %s: %w; then %v", d.Update().Node, drainErr, err)
	}
	return fmt.Errorf("draining node %s: %w; %s; retrying later", d.Update().Node, drainErr, outcome)
}

// supersededCordon is the cordon and drain phases' OnSuperseded: the new
// desired config's update starts from an uncordoned node holding no slot,
// so that whatever it does (even fail) leaves neither behind unreported.
// If it needs a drain, it cordons again.
func supersededCordon(ctx context.Context, d Data) error {
	if _, err := giveBack(ctx, d, "Uncordoned: the node's desired config changed before anything was written"); err != nil {
		return fmt.Errorf("stopping the update of node %s for its new desired config: %w", d.Update().Node, err)
	}
	return nil
}

// GiveBack undoes the cordon and gives back the disruption slot of r's
// update, which a new desired config replaces before it wrote anything and
// which did not do so itself (a restart, a SIGTERM or a failure came
// between; a running update does it on ErrSuperseded). The new config's
// update then starts from an uncordoned node holding no slot, whatever it
// needs. It returns what it did.
func (r *Runner) GiveBack(ctx context.Context) (string, error) {
	msg := "Uncordoned: the update to " + r.Record.Desired + " was replaced by a new desired config before it wrote anything"
	if r.Record.WriteStarted {
		msg = "Uncordoned: the update to " + r.Record.Desired + " was replaced by a new desired config while it " +
			"was writing; what it had written was rolled back"
	}
	outcome, err := giveBack(ctx, r, msg)
	if err != nil {
		return "", fmt.Errorf("giving back the cordon of the replaced update to %s: %w", r.Record.Desired, err)
	}
	return outcome, nil
}

// giveBack undoes an update's cordon before anything is written: the
// cordon step is forgotten (the record first, so a crash at any point
// leaves a record that cordons again), the node uncordoned if this daemon
// cordoned it (Cordoned then says so, with uncordoned), and only then the
// disruption slot given back: a node waiting for the slot cordons as soon as
// it gets it, and this node must not be cordoned still. A crash or a failed
// uncordon before the release keeps the slot (its Lease names this node,
// which adopts it again), so the retry's cordon holds a slot too. It
// returns what it did.
func giveBack(ctx context.Context, d Data, uncordoned string) (string, error) {
	rec := d.Progress()
	wasCordoned := rec.Done("cordon")
	rec.Forget("cordon")
	if err := d.SaveProgress(); err != nil {
		return "", err
	}
	outcome := "the node was not cordoned"
	if rec.WriteStarted {
		outcome = "the node was not cordoned; what was written was rolled back"
	}
	if wasCordoned {
		outcome = "the node stays cordoned (it was cordoned before the update)"
	}
	if rec.CordonedByUs {
		if err := d.Cluster().Uncordon(ctx); err != nil {
			return "", err
		}
		rec.CordonedByUs = false
		if err := d.SaveProgress(); err != nil {
			return "", fmt.Errorf("uncordoned the node, then %w", err)
		}
		d.SetCondition(status.Cordoned, metav1.ConditionFalse, status.Reason(status.Cordoned), uncordoned)
		outcome = "uncordoned the node, nothing was written"
		if rec.WriteStarted {
			outcome = "uncordoned the node, what was written was rolled back"
		}
	}
	// The retry waits for a slot again before it cordons.
	if err := releaseSlot(ctx, d); err != nil {
		return "", fmt.Errorf("%s, then %w", outcome, err)
	}
	return outcome, nil
}

// Write applies files, units, SSH keys and OS changes. A failure rolls back
// what this update already wrote, in reverse order, before it is reported.
func Write() Phase {
	return Phase{
		Name: "write", Group: status.UpdateExecuted, Condition: status.AppliedFilesAndOS,
		Wait: holdSlot,
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			u := d.Update()
			if err := markWriteStarted(d); err != nil {
				return Outcome{}, err
			}
			txn, err := d.Host().BeginTxn(u.DesiredName)
			if err != nil {
				return Outcome{}, fmt.Errorf("starting the write of %s: %w", u.DesiredName, err)
			}
			msg, err := write(ctx, d, txn)
			if err != nil {
				if rbErr := txn.Rollback(); rbErr != nil {
					return Outcome{}, fmt.Errorf("%w; rolling back also failed: %v", err, rbErr)
				}
				if len(u.Diff.ChangedUnits)+len(u.Diff.RemovedUnits) > 0 {
					_ = d.Units().DaemonReload(ctx)
				}
				// A deployment staged before the failure (an image before
				// its kernel arguments) would come up at the next reboot.
				if u.Diff.OSChanged() {
					removed, usErr := d.OS().Unstage(ctx)
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
			d.Progress().Finish(progress.Step{Name: "write", Reason: status.Reason(status.AppliedFilesAndOS), Message: msg})
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

func write(ctx context.Context, d Data, txn Txn) (string, error) {
	diff := d.Update().Diff
	if err := recordUnitStates(ctx, d.Units(), txn, diff); err != nil {
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
		if err := d.Units().Disable(ctx, names...); err != nil {
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
	if diff.SSHKeysChanged {
		if err := txn.WriteSSHKeys(d.Update().Desired.SSHKeys); err != nil {
			return "", fmt.Errorf("writing SSH keys of user core: %w", err)
		}
	}
	if len(diff.ChangedUnits)+len(diff.RemovedUnits) > 0 {
		if err := d.Units().DaemonReload(ctx); err != nil {
			return "", fmt.Errorf("reloading systemd: %w", err)
		}
		if err := applyEnablement(ctx, d.Units(), diff.ChangedUnits); err != nil {
			return "", err
		}
	}
	staged, err := writeOS(ctx, d)
	if err != nil {
		return "", err
	}
	parts := []string{plural(len(diff.ChangedFiles), "file")}
	if n := len(diff.RemovedFiles); n > 0 {
		parts = append(parts, plural(n, "file")+" removed")
	}
	if n := len(diff.ChangedUnits) + len(diff.RemovedUnits); n > 0 {
		parts = append(parts, plural(n, "unit"))
	}
	if diff.SSHKeysChanged {
		parts = append(parts, "SSH keys")
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
	osu := d.OS()
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
	c := OSChange{KernelArgs: u.Desired.KernelArguments, Removed: u.Diff.KernelArgsRemoved, Added: u.Diff.KernelArgsAdded}
	if u.Diff.OSImageChanged {
		c.Image = u.Desired.OSImageURL
	}
	staged, err := osu.Stage(ctx, c)
	if err != nil {
		return "", fmt.Errorf("staging the OS update with %s: %w", osu.Name(), err)
	}
	return staged, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// applyEnablement enables, disables, masks and unmasks units as the config
// says, over D-Bus.
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
