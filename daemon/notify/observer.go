package notify

import (
	"context"
	"time"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// Observe returns an observer of the update that tells next (the
// metrics) everything, and n the steps people are told of: the cordon
// done, the uncordon done, an update that failed. (The reboot is told by
// Units, at the one call that reboots: the reboot step also starts again
// after the boot, in the next process.)
func Observe(next phases.Observer, n *Notifier) phases.Observer {
	if n == nil {
		return next
	}
	return observer{next: next, n: n}
}

type observer struct {
	next phases.Observer
	n    *Notifier
}

func (o observer) PhaseStarted(phase string) { o.next.PhaseStarted(phase) }

func (o observer) PhaseDone(phase string, took time.Duration) {
	o.next.PhaseDone(phase, took)
	switch phase {
	case progress.StepCordon:
		o.n.Notify(EventCordoned, "was cordoned, to be drained")
	case progress.StepUncordon:
		o.n.Notify(EventUncordoned, "was uncordoned")
	}
}

func (o observer) UpdateFinished(result string) {
	o.next.UpdateFinished(result)
	if result == phases.ResultFailed || result == phases.ResultRefused {
		o.n.Notify(EventFailed, "failed its update ("+result+"); its MachineConfigNode says why")
	}
}

func (o observer) Waiting(reason string) { o.next.Waiting(reason) }

// HealthResult tells next (the metrics) a result of the health gate, and n
// a rollback.
func HealthResult(next func(string), n *Notifier) func(string) {
	return func(result string) {
		if next != nil {
			next(result)
		}
		if result == "rolled-back" || result == "rollback-failed" {
			n.Notify(EventRolledBack, "was rolled back by the health gate ("+result+")")
		}
	}
}

// Units returns the node's systemd as the update drives it, telling n
// when it reboots the node (the notification is queued before the reboot
// is asked for; whether it leaves before the node goes down depends on the
// webhook: it is not waited for).
func Units(u phases.Units, n *Notifier) phases.Units {
	if n == nil {
		return u
	}
	return units{Units: u, n: n}
}

type units struct {
	phases.Units
	n *Notifier
}

func (u units) Reboot(ctx context.Context) error {
	u.n.Notify(EventRebooting, "is rebooting")
	return u.Units.Reboot(ctx)
}
