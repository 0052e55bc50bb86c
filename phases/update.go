package phases

import (
	"fmt"
	"strings"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// All is the whole update of a node, in order: every step an administrator
// sees, each in its own file. The daemon's loop runs it (Runner.Run) once
// the node's desired config differs from its current one, or when a record
// of an unfinished update is on the node; a restarted daemon resumes at the
// first step not done. Before it, each pass of the loop rolls back or
// removes the journals no update owns (CleanLeftovers, leftovers.go). When
// a step fails, the update ends with Fail (runnerstatus.go) and is retried
// from that step with backoff.
func All() []Phase {
	return []Phase{
		GiveBack(),   // giveback.go: what a replaced update held, given back
		Adopt(),      // adopt.go: a node that already runs its desired config
		Detect(),     // detect.go: the status reset, state=Working
		Prepare(),    // prepare.go: fetch, validate, diff, post action
		HealthWait(), // healthwait.go: not a config that failed the gate elsewhere
		// The waits (waits.go: pause, maintenance window, blocking pods)
		// hold the cordon and the drain, or, for an update that drains
		// nothing, the gate before its first write.
		Gated(Cordon()), // cordon.go: the pod check, then the cordon
		Gated(Drain()),  // drain.go
		Gate(),          // waits.go
		Write(),         // write.go: files, units, SSH keys, OS; journaled
		Reboot(),        // postaction.go
		ReloadCRIO(),    // postaction.go
		PostAction(),    // postaction.go: the units the policy names
		Validate(),      // complete.go: the node against the config
		Health(),        // health.go: the health gate; on failure, rollback.go
		Uncordon(),      // complete.go
		SetCurrent(),    // complete.go: currentConfig, state=Done
		Resume(),        // complete.go: the drift monitor, Updated=True
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
