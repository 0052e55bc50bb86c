package phases

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// The post-update health gate: after the post action and before the
// uncordon (so before the node counts as available again), the node must be
// healthy on the desired config, within a timeout: the Node Ready again as
// the kubelet reports it (after a reboot), the listed units active and not
// restarting, the check command exiting 0. A node that is not is rolled back
// to the config it came from (rollback.go) and kept there.

// ErrRolledBack is returned once the health gate rolled a failed update back: the
// node runs the config it came from and keeps it until its desired config
// changes or an administrator asks for a retry. It is not a failure of the
// daemon; the status says what happened.
var ErrRolledBack = errors.New("update rolled back by the health gate; keeping the previous config")

// HealthGate configures the gate (flags --health-units, --health-command,
// --health-timeout).
type HealthGate struct {
	Probe HealthProbe
	// Units must be active and not restarting.
	Units []string
	// Command, when set, is run in the host root (argv, no shell) and
	// must exit 0.
	Command []string
	// Timeout bounds the gate: healthy within it, else rolled back.
	Timeout time.Duration
	// Interval is the time between two checks; 0 means 5s.
	Interval time.Duration
	// Observe, when set, is told of the gate's results: "passed",
	// "failed", "rolled-back", "rollback-failed" (the daemon counts them
	// in nodeconfd_health_gate_results_total).
	Observe func(result string)
}

// HealthProbe is what the gate reads of the node and writes for it
// (package daemon implements it over the Node watch, D-Bus and chroot).
type HealthProbe interface {
	// NodeReady reports whether the Node's Ready condition is True with a
	// heartbeat at or after since, and if not, what it says.
	NodeReady(ctx context.Context, since time.Time) (bool, string, error)
	// Unit reads a unit's state from systemd.
	Unit(ctx context.Context, name string) (UnitHealth, error)
	// Command runs argv in the host root with its own timeout; nil when it
	// exits 0, else how it ended.
	Command(ctx context.Context, argv []string) error
	// SetFailedConfig writes the node's failedConfig annotation.
	SetFailedConfig(ctx context.Context, name string) error
	// ClearFailedConfig removes the failedConfig annotation when it names
	// config (which passed the gate now).
	ClearFailedConfig(ctx context.Context, config string) error
	// FailedOn names another node whose failedConfig annotation is
	// config, "" when there is none.
	FailedOn(ctx context.Context, config string) (string, error)
	// WaitNotFailedOn blocks, without polling, until no other node's
	// failedConfig annotation is config, or ctx ends; failedOn is told a
	// node that records it each time that node changes.
	WaitNotFailedOn(ctx context.Context, config string, failedOn func(node string)) error
}

// UnitHealth is a unit's state as systemd reports it.
type UnitHealth struct {
	LoadState, ActiveState, SubState string
	// Restarts is systemd's NRestarts: automatic restarts since the unit
	// was last started by hand.
	Restarts uint32
}

// DefaultHealthInterval is the time between two checks of the gate.
const DefaultHealthInterval = 5 * time.Second

func (g *HealthGate) interval() time.Duration {
	if g.Interval > 0 {
		return g.Interval
	}
	return DefaultHealthInterval
}

func (g *HealthGate) observe(result string) {
	if g != nil && g.Observe != nil {
		g.Observe(result)
	}
}

// gateNeeded is the gate's Needed: a reboot update checks at least that the
// Node is Ready again; a rebootless one only what the flags list.
func gateNeeded(d Data) (bool, string) {
	g := d.Ports().Health
	switch {
	case g == nil || g.Probe == nil:
		return false, "No health gate is configured"
	case d.Update().Action.Kind == plan.ActionReboot:
		return true, ""
	case len(g.Units)+len(g.Command) > 0:
		return true, ""
	}
	return false, "Rebootless update; no health units or command configured"
}

// Health is the health gate's phase: it checks the node after the post
// action. When the check fails, the update is rolled back (the rest of the
// phase) and the run ends with ErrRolledBack. A restart resumes where the record
// says: the check (its timeout counted from its first start), or the
// rollback's next step.
func Health() Step {
	return Step{
		Name: progress.StepHealth, Show: Show{Condition: status.HealthChecked, Starting: "Checking the health of the node", OnNode: true},
		Needed: gateNeeded,
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			rec := d.Progress()
			if rec.Health == nil {
				rec.Health = &progress.Health{}
			}
			if rec.Health.Failed == "" && (d.Update().CurrentName == "" || rec.RebootRequest != "") {
				// No config to go back to (a node adopted at this one, a
				// reboot on request): checked, and reported, but never
				// rolled back.
				return gateWithoutRollback(ctx, d)
			}
			if rec.Health.Failed == "" {
				out, passed, err := checkDesired(ctx, d)
				if err != nil || passed {
					return out, err
				}
			}
			return rollBack(ctx, d)
		},
	}
}

// checkDesired runs the gate on the desired config. It reports passed, or
// records the failure (before anything is rolled back) and says so in a
// Warning Event.
func checkDesired(ctx context.Context, d Data) (Outcome, bool, error) {
	u := d.Update()
	h := d.Progress().Health
	if h.StartedAt.IsZero() {
		h.StartedAt = d.Clock().UTC().Truncate(time.Millisecond)
		if err := d.SaveProgress(); err != nil {
			return Outcome{}, false, err
		}
	}
	res, err := watchHealth(ctx, d, gateCheck{config: u.DesiredName, ready: u.Action.Kind == plan.ActionReboot,
		since: d.Progress().Reboot.RequestedAt, deadline: h.StartedAt.Add(d.Ports().Health.Timeout)})
	if err != nil {
		return Outcome{}, false, err
	}
	if res.healthy {
		if err := d.Ports().Health.Probe.ClearFailedConfig(ctx, u.DesiredName); err != nil {
			return Outcome{}, false, fmt.Errorf("removing the failedConfig annotation: %w", err)
		}
		d.Ports().Health.observe("passed")
		return Outcome{Message: healthyMessage(ctx, d, res.message)}, true, nil
	}
	h.Failed = res.message
	if err := d.SaveProgress(); err != nil {
		return Outcome{}, false, err
	}
	d.Ports().Health.observe("failed")
	d.Warn("HealthCheckFailed", fmt.Sprintf("Config %s failed the health gate on node %s: %s; rolling back to %s",
		u.DesiredName, u.Node, h.Failed, previousName(u)))
	return Outcome{}, false, nil
}

// healthyMessage is the gate's message when it passed. After a reboot into
// a new OS deployment, the rollback deployment the reboot's check kept for
// the gate is cleaned up now (a failed cleanup is reported, not fatal).
func healthyMessage(ctx context.Context, d Data, msg string) string {
	if d.Ports().OS == nil || !d.Update().Diff.OSChanged() || d.Update().Action.Kind != plan.ActionReboot {
		return msg
	}
	done, err := d.Ports().OS.Cleanup(ctx)
	if err != nil {
		return msg + "; OS cleanup failed: " + err.Error()
	}
	return msg + "; " + done
}

// gateCheck is one run of checks until healthy or the deadline.
type gateCheck struct {
	config string
	// ready asks for the Node Ready with a heartbeat at or after since.
	ready bool
	since time.Time
	// optional skips listed units systemd does not know (after a rollback
	// that removed them).
	optional bool
	deadline time.Time
}

type gateResult struct {
	healthy bool
	message string
}

// watchHealth checks the node every interval until it is healthy twice in a
// row (no unit restarted in between), a listed unit failed for good, or the
// deadline passed. A shutdown ends it with ErrStopped (a new desired config
// does not: the update committed at its write and runs to its end).
func watchHealth(ctx context.Context, d Data, c gateCheck) (gateResult, error) {
	g := d.Ports().Health
	var prev map[string]UnitHealth
	lastReport := ""
	cut, release := d.Cuttable(ctx) // the checks only: never the rollback's steps
	defer release()
	for {
		units, v := healthRound(ctx, d, c)
		if v.healthy && prev != nil {
			why := restarted(prev, units)
			if why == "" {
				return gateResult{healthy: true, message: v.message}, nil
			}
			v = verdict{why: why}
		}
		if v.healthy {
			prev = units
		} else {
			prev = nil
		}
		if v.final || (!v.healthy && !d.Clock().Before(c.deadline)) {
			return gateResult{message: v.why}, nil
		}
		msg := "Checking the health of node " + d.Update().Node + " on " + c.config
		if !v.healthy {
			msg += "; waiting for " + v.why
		}
		if msg != lastReport {
			_ = d.Report(ctx, msg)
			lastReport = msg
		}
		select {
		case <-cut.Done():
			// The update committed at its write, so only a shutdown
			// interrupts it: the check runs again at the next start.
			return gateResult{}, context.Cause(cut)
		case <-time.After(g.interval()):
		}
	}
}

// verdict is one round of checks.
type verdict struct {
	healthy bool
	// final marks a failure that waiting does not mend (a failed unit).
	final   bool
	why     string
	message string
}

// healthRound runs every check once and returns the units' states.
func healthRound(ctx context.Context, d Data, c gateCheck) (map[string]UnitHealth, verdict) {
	g := d.Ports().Health
	var passed []string
	if c.ready {
		ok, why, err := g.Probe.NodeReady(ctx, c.since)
		switch {
		case err != nil:
			return nil, verdict{why: "the Node's Ready condition: " + err.Error()}
		case !ok:
			return nil, verdict{why: "the Node to be Ready: " + why}
		}
		passed = append(passed, "Node Ready")
	}
	units := map[string]UnitHealth{}
	for _, name := range g.Units {
		st, err := g.Probe.Unit(ctx, name)
		if err != nil {
			return nil, verdict{why: "unit " + name + ": " + err.Error()}
		}
		v := judgeUnit(name, st, c.optional)
		if !v.healthy {
			return nil, v
		}
		units[name] = st
	}
	if len(g.Units) > 0 {
		passed = append(passed, "units "+strings.Join(g.Units, ", ")+" active")
	}
	if len(g.Command) > 0 {
		if err := g.Probe.Command(ctx, g.Command); err != nil {
			return nil, verdict{why: "the check command " + g.Command[0] + " to succeed: " + err.Error()}
		}
		passed = append(passed, "check command "+g.Command[0]+" succeeded")
	}
	return units, verdict{healthy: true, message: "Healthy on " + c.config + ": " + strings.Join(passed, "; ")}
}

// judgeUnit decides on one unit's state: active is healthy; failed is a
// failure that waiting does not mend; anything else (activating, an
// automatic restart pending) is waited for. A unit systemd does not know is
// a failure, or, when optional (after a rollback that removed it), fine.
func judgeUnit(name string, st UnitHealth, optional bool) verdict {
	state := st.ActiveState
	if st.SubState != "" {
		state += " (" + st.SubState + ")"
	}
	switch {
	case st.LoadState == "not-found" && optional:
		return verdict{healthy: true}
	case st.LoadState == "not-found":
		return verdict{final: true, why: "unit " + name + " to be active: systemd does not know it"}
	case st.ActiveState == "active":
		return verdict{healthy: true}
	case st.ActiveState == "failed":
		return verdict{final: true, why: fmt.Sprintf("unit %s to be active: it is %s after %d restarts", name, state, st.Restarts)}
	}
	return verdict{why: fmt.Sprintf("unit %s to be active: it is %s after %d restarts", name, state, st.Restarts)}
}

// restarted names a unit systemd restarted between two rounds, "" if none.
func restarted(prev, now map[string]UnitHealth) string {
	for name, st := range now {
		if p, ok := prev[name]; ok && st.Restarts > p.Restarts {
			return fmt.Sprintf("unit %s to stay up: systemd restarted it %d times since the last check", name, st.Restarts-p.Restarts)
		}
	}
	return ""
}

// previousName is the config an update came from, for messages.
func previousName(u *Update) string { return previousOf(u.CurrentName) }

// previousOf names the config a rollback goes back to, current.
func previousOf(current string) string {
	if current == "" {
		return "the node's previous state"
	}
	return current
}

// gateWithoutRollback is the gate of an update with no previous config: a
// failure is reported as the update's failure (the daemon retries it with
// backoff), with nothing rolled back.
func gateWithoutRollback(ctx context.Context, d Data) (Outcome, error) {
	u := d.Update()
	res, err := watchHealth(ctx, d, gateCheck{config: u.DesiredName, ready: u.Action.Kind == plan.ActionReboot,
		since: d.Progress().Reboot.RequestedAt, deadline: d.Clock().Add(d.Ports().Health.Timeout)})
	if err != nil {
		return Outcome{}, err
	}
	if !res.healthy {
		d.Ports().Health.observe("failed")
		return Outcome{}, fmt.Errorf("config %s failed the health gate on node %s: %s; the node has no previous config "+
			"to roll back to", u.DesiredName, u.Node, res.message)
	}
	d.Ports().Health.observe("passed")
	return Outcome{Message: healthyMessage(ctx, d, res.message)}, nil
}
