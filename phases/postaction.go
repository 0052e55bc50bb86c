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
func Reboot() Phase {
	return Phase{
		Name: progress.StepReboot, Group: status.UpdatePostActionComplete, Condition: status.RebootedNode,
		Starting: "Rebooting node", EventOnNode: true,
		Needed: actionIs(plan.ActionReboot),
		Wait:   rebootSlot,
		// Its start is written with "Rebooting into X" before the reboot,
		// and after the boot with its end: two status writes fewer per
		// update, and RebootedNode goes Unknown then True all the same.
		Quick: true,
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			rec := d.Progress()
			boot, err := d.Units().BootID(ctx)
			if err != nil {
				return Outcome{}, fmt.Errorf("reading the boot ID: %w", err)
			}
			if rec.RebootFromBootID != "" && rec.RebootFromBootID != boot {
				var took time.Duration
				if !rec.RebootRequestedAt.IsZero() {
					took = d.Clock().Sub(rec.RebootRequestedAt)
				}
				msg := fmt.Sprintf("Rebooted; boot ID changed from %s to %s", rec.RebootFromBootID, boot)
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
			rec.RebootFromBootID, rec.RebootRequestedAt = boot, d.Clock().UTC().Truncate(time.Millisecond)
			if err := d.SaveProgress(); err != nil {
				return Outcome{}, err
			}
			if err := d.Report(ctx, "Rebooting into "+d.Update().DesiredName); err != nil {
				return Outcome{}, err
			}
			if err := d.Units().Reboot(ctx); err != nil {
				return Outcome{}, fmt.Errorf("asking logind to reboot: %w", err)
			}
			return Outcome{}, ErrRebooting
		},
	}
}

// ReloadCRIO reloads crio.service and waits for the job's result.
func ReloadCRIO() Phase {
	return Phase{
		Name: progress.StepReloadCRIO, Group: status.UpdatePostActionComplete, Condition: status.ReloadedCRIO,
		Starting: "Reloading " + plan.CRIOUnit,
		Needed:   actionIs(plan.ActionReloadCRIO),
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			if err := d.Units().Reload(ctx, plan.CRIOUnit); err != nil {
				return Outcome{}, fmt.Errorf("reloading %s: %w", plan.CRIOUnit, err)
			}
			return Outcome{Message: "Reloaded " + plan.CRIOUnit}, nil
		},
	}
}

// PostAction reloads or restarts the units the policy named, runs a
// daemon-reload when that is all the change needs, and closes the post
// action with a message saying what was done.
func PostAction() Phase {
	return Phase{
		Name: progress.StepPostAction, Group: status.UpdatePostActionComplete,
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			a := d.Update().Action
			var done []string
			if a.Kind == plan.ActionDaemonReload || a.DaemonReload {
				if err := d.Units().DaemonReload(ctx); err != nil {
					return Outcome{}, fmt.Errorf("reloading systemd: %w", err)
				}
				done = append(done, "reloaded systemd")
			}
			for _, u := range a.ReloadUnits {
				if u == plan.CRIOUnit && a.Kind == plan.ActionReloadCRIO {
					continue // done by the ReloadCRIO phase
				}
				if err := d.Units().Reload(ctx, u); err != nil {
					return Outcome{}, fmt.Errorf("reloading %s: %w", u, err)
				}
				done = append(done, "reloaded "+u)
			}
			for _, u := range a.RestartUnits {
				if err := d.Units().Restart(ctx, u); err != nil {
					return Outcome{}, fmt.Errorf("restarting %s: %w", u, err)
				}
				done = append(done, "restarted "+u)
			}
			switch {
			case a.Kind == plan.ActionReboot:
				return Outcome{Message: "Rebooted into " + d.Update().DesiredName}, nil
			case a.Kind == plan.ActionReloadCRIO && len(done) == 0:
				return Outcome{Message: "Reloaded " + plan.CRIOUnit}, nil
			case a.Kind == plan.ActionReloadCRIO:
				return Outcome{Message: "Reloaded " + plan.CRIOUnit + "; " + strings.Join(done, "; ")}, nil
			case len(done) == 0:
				return Outcome{Reason: status.ReasonNone, Message: "Changes need no reboot or reload"}, nil
			}
			msg := strings.Join(done, "; ")
			return Outcome{Message: strings.ToUpper(msg[:1]) + msg[1:]}, nil
		},
	}
}
