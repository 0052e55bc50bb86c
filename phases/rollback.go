package phases

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// The health gate's rollback undoes a committed update by applying the
// config it came from with the update's own write code: the reverse diff
// (desired to previous) goes through a new transaction, journaled like any
// write, so a crash in the middle resumes it (the journal keeps the state
// from before its first attempt). The OS image and kernel arguments go back
// through the updater's own rollback, then comes the post action the
// rollback needs: a reboot when the update rebooted (or the OS was rolled
// back), else the reverse diff's reloads and restarts. The node must then
// be healthy on the previous config; only then is it uncordoned and the
// failed config recorded. Each step is recorded in the
// progress record (progress.Health) once done and never run twice; the
// reboot above all: a node that does not come back healthy from it is
// reported, never rebooted again.

// Rollback step names in progress.Health.
const (
	rollbackWrite = progress.RollbackWrite
	rollbackOS    = progress.RollbackOS
	rollbackPost  = progress.RollbackPost
	rollbackCheck = progress.RollbackCheck
)

// RollbackTxnID is the journal of the health gate's rollback of the update
// to desired (a name of at most 255 bytes, as the journal's folder).
func RollbackTxnID(desired string) string {
	id := "rollback-" + desired
	if len(id) > 255 {
		sum := sha256.Sum256([]byte(desired))
		id = "rollback-" + hex.EncodeToString(sum[:16])
	}
	return id
}

// reversed is the update seen backwards, for the write code: from the
// desired config to the previous one, without its OS part (the updater's
// rollback does that).
type reversed struct {
	Data
	u *Update
}

func (r reversed) Update() *Update { return r.u }

// Ports are the update's without an OS updater: the rollback's OS goes
// back through the updater's own rollback, not through the write.
func (r reversed) Ports() *Ports {
	p := *r.Data.Ports()
	p.OS = nil
	return &p
}

// reverse builds the reversed update of d's.
func reverse(d Data) reversed {
	u := d.Update()
	// The diff is complete also when unreconcilable sections differ: the
	// update did not change them, so the rollback leaves them too.
	diff, _ := plan.Compare(u.Desired, u.Current)
	diff.OSImageChanged, diff.KernelArgsRemoved, diff.KernelArgsAdded = false, nil, nil
	diff.ExtensionsChanged, diff.KernelTypeChanged = false, false
	r := &Update{Node: u.Node, CurrentName: u.DesiredName, DesiredName: u.CurrentName,
		Current: u.Desired, Desired: u.Current, Diff: diff, Runtime: u.Runtime}
	// The rollback must run whatever the policy's state: without one in
	// force (refused, none good before), the defaults decide.
	policy, err := d.Ports().PolicyInForce()
	if err != nil {
		policy = plan.DefaultPolicy()
	}
	r.Action = policy.ForRuntime(u.Runtime).PostAction(u.Desired, u.Current, diff)
	return reversed{Data: d, u: r}
}

// withNeeded is s, needed only when needed says.
func withNeeded(s Step, needed func(Data) (bool, string)) Step {
	s.Needed = needed
	return s
}

// subStep is a step of a sub-list: it reports through the step that runs
// the sub-list, so it says only what it did.
func subStep(name string, run func(ctx context.Context, d Data) (string, error)) Step {
	return Step{Name: name, Show: Show{Quick: true}, Run: func(ctx context.Context, d Data) (Outcome, error) {
		msg, err := run(ctx, d)
		return Outcome{Message: msg}, err
	}}
}

// rollBack runs the rollback's steps not yet done, then keeps the node on
// its previous config.
func rollBack(ctx context.Context, d Data) (Outcome, error) {
	u := d.Update()
	h := d.Progress().Health
	_ = d.Report(ctx, fmt.Sprintf("Rolling back to %s: %s failed the health gate: %s", previousName(u), u.DesiredName, h.Failed))
	err := d.RunSub(ctx, "rollback", h, Rollback())
	switch {
	case errors.Is(err, ErrRebooting), errors.Is(err, ErrStopped): // it goes on after the boot, or the next start
		return Outcome{}, err
	case err != nil:
		d.Ports().Health.observe("rollback-failed")
		return Outcome{}, fmt.Errorf("rolling back node %s from %s to %s after the health gate failed (%s): %w",
			u.Node, u.DesiredName, previousName(u), h.Failed, err)
	}
	return keepPrevious(ctx, d)
}

// rollBackWrite writes the previous config's files, units, enablement and
// SSH keys back through a new transaction. The step is recorded done (by
// rollBack) before the journal is dropped; a journal left by a crash
// before that is kept for the rollback (CleanLeftovers), and its commit is
// repeated here.
func rollBackWrite(ctx context.Context, d Data) (string, error) {
	rev := reverse(d)
	id := RollbackTxnID(d.Update().DesiredName)
	txn, err := d.Ports().Host.BeginTxn(id)
	if err != nil {
		return "", fmt.Errorf("starting the rollback's write: %w", err)
	}
	msg, err := write(ctx, rev, txn)
	removed := 0
	if err == nil {
		// The update's files are gone: the folders it made for them go too
		// (when empty), so a later config may put a file there.
		removed, err = txn.RemoveEmptyDirs(d.Progress().Write.CreatedDirs)
	}
	if err != nil {
		if rbErr := txn.Rollback(); rbErr != nil {
			return "", fmt.Errorf("%w; undoing the rollback's partial write also failed: %v", err, rbErr)
		}
		_ = d.Ports().Units.DaemonReload(ctx)
		return "", err
	}
	// The OS goes back through the updater's rollback (its own step).
	msg = strings.TrimSuffix("Restored"+strings.TrimPrefix(msg, "Applied"), ", OS unchanged")
	if removed > 0 {
		msg += fmt.Sprintf(", removed %s the update made", plan.Plural(removed, "folder"))
	}
	h := d.Progress().Health
	h.MarkDone(progress.Step{Name: rollbackWrite, Message: msg})
	if err := d.SaveProgress(); err != nil {
		return "", err
	}
	if err := txn.Commit(); err != nil {
		return "", fmt.Errorf("committing the rollback's write: %w", err)
	}
	return msg, nil
}

// rollBackOS rolls the OS image and kernel arguments back through the
// updater's own rollback, when the update changed them.
func rollBackOS(ctx context.Context, d Data) (string, error) {
	u := d.Update()
	if d.Ports().OS == nil || !u.Diff.OSChanged() {
		return "OS unchanged", nil
	}
	msg, err := d.Ports().OS.Rollback(ctx, OSTarget{Image: u.Current.OSImageURL, KernelArgs: u.Current.KernelArguments})
	if err != nil {
		return "", fmt.Errorf("rolling back the OS with %s: %w", d.Ports().OS.Name(), err)
	}
	return msg, nil
}

// rollbackReboots reports whether the rollback reboots the node: when the
// update did, when the OS was rolled back, or when the reverse diff needs it.
func rollbackReboots(d Data, rev reversed) bool {
	u := d.Update()
	return u.Action.Kind == plan.ActionReboot || rev.u.Action.Kind == plan.ActionReboot ||
		(d.Ports().OS != nil && u.Diff.OSChanged())
}

// rollBackPost runs the post action the rollback needs. The reboot is asked
// for once: its boot ID is saved first, and once the boot ID changed the
// step is done whatever the node then looks like.
func rollBackPost(ctx context.Context, d Data) (string, error) {
	rev := reverse(d)
	if !rollbackReboots(d, rev) {
		done, err := runActions(ctx, rev)
		if err != nil {
			return "", err
		}
		return actionsMessage(d, rev.u.Action, done), nil
	}
	h := d.Progress().Health
	now, err := readBoot(ctx, d.Ports().Units)
	if err != nil {
		return "", fmt.Errorf("reading the boot ID: %w", err)
	}
	rebooted, err := now.since(h.Reboot.FromBootID, h.Reboot.FromBootStart)
	if err != nil {
		return "", err
	}
	if rebooted {
		return fmt.Sprintf("Rebooted into %s; boot ID changed from %s to %s", previousName(d.Update()), h.Reboot.FromBootID, now.mark()), nil
	}
	now.save(&h.Reboot.FromBootID, &h.Reboot.FromBootStart)
	h.Reboot.RequestedAt = d.Clock().UTC().Truncate(time.Millisecond)
	if err := d.SaveProgress(); err != nil {
		return "", err
	}
	_ = d.Report(ctx, "Rebooting to roll back to "+previousName(d.Update()))
	if err := d.Ports().Units.Reboot(ctx); err != nil {
		return "", fmt.Errorf("asking logind to reboot: %w", err)
	}
	return "", ErrRebooting
}

// rollBackCheck checks the node on the previous config: after a reboot,
// that it booted the previous OS and the Node is Ready again; the listed
// units (those the previous config has) and the check command as the gate
// does. A node unhealthy here keeps its cordon and is reported;
// it is not rebooted again.
func rollBackCheck(ctx context.Context, d Data) (string, error) {
	rev := reverse(d)
	u := d.Update()
	rebooted := rollbackReboots(d, rev)
	if rebooted && d.Ports().OS != nil && u.Diff.OSChanged() {
		if err := CheckOS(ctx, d.Ports().OS, u.Current); err != nil {
			return "", fmt.Errorf("the node did not boot the previous OS deployment after the rollback: %w; "+
				"not rebooting again: waiting for an administrator or a new desired config", err)
		}
	}
	res, err := watchHealth(ctx, d, gateCheck{config: previousName(u), ready: rebooted, since: d.Progress().Health.Reboot.RequestedAt,
		optional: true, deadline: d.Clock().Add(d.Ports().Health.Timeout)})
	if err != nil {
		return "", err
	}
	if !res.healthy {
		return "", fmt.Errorf("the node is not healthy on %s either: waiting for %s; keeping the cordon, "+
			"not rebooting again: waiting for an administrator or a new desired config", previousName(u), res.message)
	}
	return res.message, nil
}

// keepPrevious ends the rollback: the failed config recorded on the node, state
// Degraded, the cordon lifted (the node is healthy
// on its previous config), and the status saying what happened (KeptStatus).
// Every step is idempotent until Kept is saved.
func keepPrevious(ctx context.Context, d Data) (Outcome, error) {
	u := d.Update()
	rec := d.Progress()
	g := d.Ports().Health
	msg := keptMessage(rec)
	if err := g.Probe.SetFailedConfig(ctx, u.DesiredName); err != nil {
		return Outcome{}, fmt.Errorf("recording the failed config on node %s: %w", u.Node, err)
	}
	deg := keptDegraded(msg)
	// Settled as the step goes, whatever stops it: the runner stages them.
	settles := Settles{Conditions: []Condition{deg.condition()}}
	if err := markDegraded(ctx, d.Ports().Cluster, deg); err != nil {
		return Outcome{Settles: settles}, err
	}
	if rec.Cordon.ByUs {
		if err := d.Ports().Cluster.Uncordon(ctx); err != nil {
			return Outcome{Settles: settles}, err
		}
		rec.Cordon.ByUs = false
		if err := d.SaveProgress(); err != nil {
			return Outcome{Settles: settles}, err
		}
		settles = settles.Also(condition(status.Uncordoned, metav1.ConditionTrue, status.Reason(status.Uncordoned),
			"Uncordoned node "+u.Node+" after the rollback to "+previousName(u)))
	}
	rec.Health.Kept = true
	if err := d.SaveProgress(); err != nil {
		return Outcome{Settles: settles}, err
	}
	kept := KeptStatus(rec) // NodeDegraded again, the same
	settles = settles.Also(kept.Conditions...)
	settles.Current = kept.Current
	d.Warn(status.ReasonRolledBack, msg)
	g.observe("rolled-back")
	return Outcome{Settles: settles}, ErrRolledBack
}

// KeptStatus is what the status says of a node whose update the health
// gate rolled back and that keeps its previous config (rec.Health.Kept):
// settled as the rollback ends, and staged again by the daemon when the
// node keeps it (a crash or a failed write can come between the record's
// Kept and the status). It is decided by the record alone, so both say
// the same.
func KeptStatus(rec *progress.Record) Settles {
	msg := keptMessage(rec)
	prev := previousOf(rec.Current)
	return Settles{Current: rec.Current, Conditions: []Condition{
		keptDegraded(msg).condition(),
		condition(status.HealthChecked, metav1.ConditionFalse, status.ReasonRolledBack, msg),
		condition(status.UpdateComplete, metav1.ConditionFalse, status.ReasonRolledBack, msg),
		condition(status.Updated, metav1.ConditionFalse, status.ReasonRolledBack,
			fmt.Sprintf("Node runs %s: %s failed the health gate and was rolled back", prev, rec.Desired)),
	}}
}

// keptMessage says why the node keeps its previous config and what the
// rollback did, from the record.
func keptMessage(rec *progress.Record) string {
	h := rec.Health
	what := make([]string, 0, len(h.Steps))
	for _, s := range h.Steps {
		if s.Message != "" {
			what = append(what, s.Message)
		}
	}
	prev := previousOf(rec.Current)
	return fmt.Sprintf("Config %s failed the health gate: %s. Rolled back to %s: %s. Holding %s until the desired config "+
		"changes or an administrator asks for a retry", rec.Desired, h.Failed, prev, strings.Join(what, "; "), prev)
}

func keptDegraded(msg string) Degraded {
	return Degraded{State: StateDegraded, Reason: status.ReasonHealthCheckFailed, Message: "Error: " + msg}
}
