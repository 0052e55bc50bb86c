package phases

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// All is the whole update of a node as the daemon runs it with no
// options: List(ListOptions{}).
func All() []Phase { return List(ListOptions{}) }

// ListOptions choose the variants of the update's list: every variant is
// written in List, so the list reads as the update does.
type ListOptions struct {
	// ImageModeStatus makes the write also report the split of
	// AppliedFilesAndOS (--image-mode-status, imagemode.go).
	ImageModeStatus bool
	// NoCluster leaves out the steps that need the cluster: what a node
	// updated without an API server runs (start --once-from): no give-back
	// or adoption (no cluster ever gave the node a config), no cordon,
	// drain, waits, health gate or uncordon.
	NoCluster bool
	// SkipReboot stands the reboot in for one that does not happen
	// (start --once-from --skip-reboot, skippedReboot).
	SkipReboot bool
}

// List is the whole update of a node, in order: every step an
// administrator sees, each in its own file. The daemon's loop runs it
// (Runner.Run) once the node's desired config differs from its current one,
// or when a record of an unfinished update is on the node; a restarted
// daemon resumes at the first step not done. Before it, each pass of the
// loop rolls back or removes the journals no update owns (CleanLeftovers,
// leftovers.go). When a step fails, the update ends with Fail
// (runnerstatus.go) and is retried from that step with backoff. The steps
// marked cluster() are left out with NoCluster.
func List(o ListOptions) []Phase {
	cluster := func(p Phase) []Phase {
		if o.NoCluster {
			return nil
		}
		return []Phase{p}
	}
	write, reboot := Write(), Reboot()
	if o.ImageModeStatus {
		write = splitWrite(write) // imagemode.go
	}
	if o.SkipReboot {
		reboot = skippedReboot() // postaction.go
	}
	return slices.Concat(
		cluster(GiveBack()), // giveback.go: what a replaced update held, given back
		cluster(Adopt()),    // adopt.go: a node that already runs its desired config
		[]Phase{
			Detect(),  // detect.go: the status reset, state=Working
			Prepare(), // prepare.go: fetch, validate, diff, post action
		},
		cluster(HealthWait()), // healthwait.go: not a config that failed the gate elsewhere
		// The waits (waits.go: pause, maintenance window, blocking pods)
		// hold the cordon and the drain, or, for an update that drains
		// nothing, the gate before its first write.
		cluster(WaitFirst(Cordon())), // cordon.go: the waits, the pod check, then the cordon
		cluster(Drain()),             // drain.go: a pause stops it
		cluster(Gate()),              // waits.go
		[]Phase{
			write,        // write.go: files, units, SSH keys, OS; journaled
			reboot,       // postaction.go
			ReloadCRIO(), // postaction.go
			PostAction(), // postaction.go: the units the policy names
			Validate(),   // complete.go: the node against the config
		},
		cluster(Health()),             // health.go: the health gate; on failure, rollback.go
		cluster(Uncordon()),           // complete.go
		cluster(ClearRebootRequest()), // rebootrequest.go: a reboot on request answered
		[]Phase{
			SetCurrent(), // complete.go: currentConfig, state=Done
			Resume(),     // complete.go: the drift monitor, Updated=True
		},
	)
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
