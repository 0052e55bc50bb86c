package phases

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

func actionIs(k plan.ActionKind) func(Data) (bool, string) {
	return func(d Data) (bool, string) {
		a := d.Update().Action.Kind
		if a == k {
			return true, ""
		}
		return false, fmt.Sprintf("Post action is %s", a)
	}
}

// Reboot reboots the node through logind after the progress record is on
// disk, and after the boot checks that the boot identity changed.
func Reboot() Step {
	return Step{
		// Its start is written with "Rebooting into X" before the reboot,
		// and after the boot with its end: two status writes fewer per
		// update, and RebootedNode goes Unknown then True all the same.
		Name:   progress.StepReboot,
		Show:   Show{Condition: status.RebootedNode, Starting: "Rebooting node", OnNode: true, Quick: true},
		Needed: actionIs(plan.ActionReboot),
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			rec := d.Progress()
			now, err := readBoot(ctx, d.Ports().Units)
			if err != nil {
				return Outcome{}, fmt.Errorf("reading the boot ID: %w", err)
			}
			rebooted, err := now.since(rec.Reboot.FromBootID, rec.Reboot.FromBootStart)
			if err != nil {
				return Outcome{}, err
			}
			if rebooted {
				var took time.Duration
				if !rec.Reboot.RequestedAt.IsZero() {
					took = d.Clock().Sub(rec.Reboot.RequestedAt)
				}
				msg := fmt.Sprintf("Rebooted; boot ID changed from %s to %s", rec.Reboot.FromBootID, now.mark())
				// After a boot that did not bring up the staged OS the phase
				// fails here at every retry and never reboots again.
				osMsg, err := checkBootedOS(ctx, d)
				if err != nil {
					return Outcome{}, err
				}
				if osMsg != "" {
					msg += "; " + osMsg
				}
				return Outcome{Message: msg, Took: took}, nil
			}
			now.save(&rec.Reboot.FromBootID, &rec.Reboot.FromBootStart)
			rec.Reboot.RequestedAt = d.Clock().UTC().Truncate(time.Millisecond)
			if err := d.SaveProgress(); err != nil {
				return Outcome{}, err
			}
			if err := d.Report(ctx, "Rebooting into "+d.Update().DesiredName); err != nil {
				return Outcome{}, err
			}
			if err := d.Ports().Units.Reboot(ctx); err != nil {
				return Outcome{}, fmt.Errorf("asking logind to reboot: %w", err)
			}
			return Outcome{}, ErrRebooting
		},
	}
}

// skippedReboot stands for the reboot with start --once-from --skip-reboot
// (ListOptions.SkipReboot).
func skippedReboot() Step {
	return Step{
		Name: progress.StepReboot, Show: Show{Condition: status.RebootedNode, Starting: "Skipping the reboot (--skip-reboot)"},
		Needed: actionIs(plan.ActionReboot),
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			return Outcome{Reason: "RebootSkipped", Message: "Reboot skipped (--skip-reboot): the changes that " +
				"need one (units, OS image, kernel arguments) take effect at the next boot"}, nil
		},
	}
}

// ReloadCRIO runs the post action's list when it reloads or restarts CRI-O
// (the ReloadedCRIO condition says so); PostAction runs it otherwise. Either
// way the list runs once, in its order.
func ReloadCRIO() Step {
	return Step{
		Name: progress.StepReloadCRIO, Show: Show{Condition: status.ReloadedCRIO, Starting: "Reloading " + plan.CRIOUnit},
		Needed: actionIs(plan.ActionReloadCRIO),
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			done, err := runActions(ctx, d)
			if err != nil {
				return Outcome{}, err
			}
			return Outcome{Message: actionsMessage(d, d.Update().Action, done)}, nil
		},
	}
}

// PostAction runs the node disruption policy's actions, in order (when the
// ReloadCRIO step did not), and closes the post action with a message
// saying what was done.
func PostAction() Step {
	return Step{
		Name: progress.StepPostAction,
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			a := d.Update().Action
			switch a.Kind {
			case plan.ActionReboot:
				return Outcome{Message: "Rebooted into " + d.Update().DesiredName}, nil
			case plan.ActionReloadCRIO: // the ReloadCRIO step ran the list
				var done []string
				for _, x := range a.Actions {
					if msg, _, _ := actionText(x); msg != "" {
						done = append(done, msg)
					}
				}
				return Outcome{Message: actionsMessage(d, a, done)}, nil
			}
			done, err := runActions(ctx, d)
			if err != nil {
				return Outcome{}, err
			}
			if len(done) == 0 {
				return Outcome{Reason: status.ReasonNone, Message: "Changes need no reboot or reload"}, nil
			}
			return Outcome{Message: actionsMessage(d, a, done)}, nil
		},
	}
}

// runActions runs the post action's list through systemd, in order, and
// says what it did. Each action is reported as it completes, as upstream
// does: an Event (ServiceReload, ServiceRestart; a Warning when it fails)
// and, while more actions are to run, the condition's message (the last
// one's is the phase's own, written a moment later: one status write
// fewer that no one could have read). A Drain was done before the writes.
// Each is safe to run again, so a restart in the middle runs the list from
// its start.
func runActions(ctx context.Context, d Data) ([]string, error) {
	var done []string
	actions := d.Update().Action.Actions
	for i, x := range actions {
		msg, reason, event, err := runAction(ctx, d.Ports().Units, x)
		if err != nil {
			d.Event(false, true, "Failed"+reason, fmt.Sprintf("%s failed: %v", x, err))
			return done, fmt.Errorf("running the post action %s: %w", x, err)
		}
		if msg == "" {
			continue
		}
		done = append(done, msg)
		d.Event(false, false, reason, event)
		if i < len(actions)-1 {
			_ = d.Report(ctx, "Node has "+strings.ToLower(msg[:1])+msg[1:])
		}
	}
	return done, nil
}

// runAction runs one action and says what it did, and the Event's reason
// and message.
func runAction(ctx context.Context, units Units, x plan.Action) (msg, reason, event string, err error) {
	msg, reason, event = actionText(x)
	switch x.Type {
	case plan.ActDaemonReload:
		err = units.DaemonReload(ctx)
	case plan.ActReload, plan.ActSpecial:
		err = units.Reload(ctx, actionUnit(x))
	case plan.ActRestart:
		err = units.Restart(ctx, x.Unit)
	}
	return msg, reason, event, err
}

// actionText is what an action did, and the Event's reason and message
// (upstream's); "" for a Drain, done before the writes.
func actionText(x plan.Action) (msg, reason, event string) {
	unit := actionUnit(x)
	switch x.Type {
	case plan.ActDaemonReload:
		return "Reloaded systemd", "ServiceReload", "Config changes do not require reboot. Service daemon-reload was reloaded."
	case plan.ActReload, plan.ActSpecial:
		return "Reloaded " + unit, "ServiceReload", "Config changes do not require reboot. Service " + unit + " was reloaded."
	case plan.ActRestart:
		return "Restarted " + unit, "ServiceRestart", "Config changes do not require reboot. Service " + unit + " was restarted."
	}
	return "", "", ""
}

// actionUnit is the unit an action acts on (CRI-O for registries.conf's
// Special).
func actionUnit(x plan.Action) string {
	if x.Type == plan.ActSpecial {
		return plan.CRIOUnit
	}
	return x.Unit
}

// actionsMessage is the post action's closing message.
func actionsMessage(d Data, a plan.PostAction, done []string) string {
	if len(done) == 0 {
		return "Changes need no reboot or reload"
	}
	msg := strings.Join(done, "; ")
	// Only a drain the update's drain step made: --once-from has none, and
	// the health gate's rollback drains nothing of its own.
	if st := d.Progress().Step(progress.StepDrain); a.Drain && st != nil && !st.Skipped {
		msg = "Drained; " + msg
	}
	return msg
}
