package phases

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// All is the whole update of a node as the daemon runs it with no
// options: List(ListOptions{}).
func All() []Item { return List(ListOptions{}) }

// ListOptions choose the variants of the update's list: every variant is
// written in List, so the list reads as the update does.
type ListOptions struct {
	// ImageModeStatus makes the write also report the split of
	// AppliedFilesAndOS (--image-mode-status, imagemode.go).
	ImageModeStatus bool
	// NoCluster leaves out the steps that need the cluster: what a node
	// updated without an API server runs (OnceFrom).
	NoCluster bool
	// SkipReboot stands the reboot in for one that does not happen
	// (start --once-from --skip-reboot, skippedReboot).
	SkipReboot bool
}

// List is the whole update of a node, in order: every step an
// administrator sees, each in its own file, in the groups whose conditions
// report them, with the gates that hold them. The daemon's loop runs it
// (Runner.Run) once the node's desired config differs from its current one,
// or when a record of an unfinished update is on the node; a restarted
// daemon resumes at the first step not done. Before it, each pass of the
// loop rolls back or removes the journals no update owns (CleanLeftovers,
// leftovers.go). When a step fails, the update ends with Fail
// (runnerstatus.go) and is retried from that step with backoff.
func List(o ListOptions) []Item {
	cluster := !o.NoCluster
	write := Write()
	if o.ImageModeStatus {
		write = splitWrite(write) // imagemode.go
	}
	reboot := []Item{VolumesDetached(), Reboot()} // volumes.go, postaction.go
	if o.SkipReboot {
		reboot = []Item{skippedReboot()} // postaction.go
	}
	return slices.Concat(
		engine.When(cluster,
			GiveBack(), // giveback.go: what a replaced update held, given back
			Adopt(),    // adopt.go: a node that already runs its desired config
		),
		[]Item{
			Detect(), // detect.go: the status reset, state=Working
			Group{Condition: status.UpdatePrepared, Items: slices.Concat(
				[]Item{Prepare()}, // prepare.go: fetch, validate, diff, post action
				engine.When(cluster,
					NotFailedElsewhere(), HealthWait(), // healthwait.go: not a config that failed the gate elsewhere
				),
			)},
			Group{Condition: status.UpdateExecuted, Items: slices.Concat(
				engine.When(cluster,
					Holds(true),     // waits.go: pause, windows, blocking pods, drain forecast, alerts
					PodsDrainable(), // cordon.go: no pod the drain would refuse
					Cordon(),        // cordon.go
					Drain(),         // drain.go: a pause cuts it
					Holds(false),    // waits.go: an update not cordoned waits here
					WriteGate(),     // waits.go
				),
				[]Item{
					Commit{}, // from here the update runs to its end
					write,    // write.go: files, units, SSH keys, OS; journaled
				},
			)},
			Group{Condition: status.UpdatePostActionComplete, Items: slices.Concat(reboot, []Item{
				ReloadCRIO(), // postaction.go
				PostAction(), // postaction.go: the units the policy names
			})},
			Group{Condition: status.UpdateComplete, Items: slices.Concat(
				[]Item{Validate()}, // complete.go: the node against the config
				engine.When(cluster,
					Health(),             // health.go: the health gate; on failure, Rollback
					Uncordon(),           // complete.go
					ClearRebootRequest(), // rebootrequest.go: a reboot on request answered
				),
				[]Item{SetCurrent()}, // complete.go: currentConfig, state=Done
			)},
			Group{Condition: status.Resumed, Items: []Item{
				Resume(), // complete.go: the drift monitor, Updated=True
			}},
		},
	)
}

// OnceFrom is the update of a node without an API server (start
// --once-from): the list without give-back or adoption (no cluster ever
// gave the node a config), cordon, drain, waits, health gate or uncordon.
func OnceFrom(skipReboot bool) []Item {
	return List(ListOptions{NoCluster: true, SkipReboot: skipReboot})
}

// Adoption is the Adopt step's sub-list: a node not known to run a config
// (adopt.go) whose files, units, SSH keys and booted OS already match the
// desired config takes it without an update. It keeps its steps in memory:
// after a restart it runs again from its first step (each is idempotent).
func Adoption() []Item {
	lost := func(d Data) (bool, string) {
		if ok, why := adopting(d); !ok {
			return ok, why
		}
		if !d.Update().adoption.lost {
			return false, "The progress record was not lost"
		}
		return true, ""
	}
	return []Item{
		subStep("match", adoptMatch),                                                                   // the node against the desired config; else the update goes on
		withNeeded(subStep("lift-cordon", adoptLiftCordon), lost),                                      // a lost update's cordon
		withNeeded(Step{Name: "set-current", Show: Show{Quick: true}, Run: adoptSetCurrent}, adopting), // currentConfig, state=Done, Updated=True
		withNeeded(subStep("resume", adoptResume), adopting),                                           // the drift monitor
	}
}

// Rollback is the health gate's rollback of a committed update, a
// sub-list of the health step (rollback.go), each step saved in
// progress.Health once done and never run twice.
func Rollback() []Item {
	return []Item{
		subStep(rollbackWrite, rollBackWrite), // the previous config's files, units, SSH keys: a new journal
		subStep(rollbackOS, rollBackOS),       // the OS, through the updater's own rollback
		subStep(rollbackPost, rollBackPost),   // a reboot, or the reverse diff's reloads and restarts
		subStep(rollbackCheck, rollBackCheck), // healthy on the previous config
	}
}

// group is a primary condition's messages.
type group struct {
	// Starting and Done are the messages while in progress and once done;
	// %s is the desired config.
	Starting, Done string
}

// groupOf returns the messages of a primary condition.
func groupOf(cond string) group {
	switch cond {
	case status.UpdatePrepared:
		return group{"Preparing update to %s", "Update to %s prepared"}
	case status.UpdateExecuted:
		return group{"Applying update to %s", "Update to %s applied"}
	case status.UpdatePostActionComplete:
		return group{"Running the post action of %s", "Completed the UpdatePostActionComplete phase"}
	case status.UpdateComplete:
		return group{"Completing update to %s", "Update to %s completed"}
	case status.Resumed:
		return group{"Restarting the config drift monitor", "Completed the Resumed phase"}
	}
	return group{"Entered the " + cond + " phase", "Completed the " + cond + " phase"}
}

func (g group) starting(desired string) string { return fill(g.Starting, desired) }
func (g group) done(desired string) string     { return fill(g.Done, desired) }

func fill(format, desired string) string {
	if strings.Contains(format, "%s") {
		return fmt.Sprintf(format, desired)
	}
	return format
}
