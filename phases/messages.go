package phases

import (
	"fmt"

	"github.com/nodeconfd/nodeconfd/phases/status"
)

// groupStartMessage is a primary condition's message while in progress.
func groupStartMessage(group, desired string) string {
	switch group {
	case status.UpdatePrepared:
		return "Preparing update to " + desired
	case status.UpdateExecuted:
		return "Applying update to " + desired
	case status.UpdatePostActionComplete:
		return "Running the post action of " + desired
	case status.UpdateComplete:
		return "Completing update to " + desired
	case status.Resumed:
		return "Restarting the config drift monitor"
	}
	return fmt.Sprintf("Entered the %s phase", group)
}

// groupDoneMessage is a primary condition's message once done.
func groupDoneMessage(group, desired string) string {
	switch group {
	case status.UpdatePrepared:
		return "Update to " + desired + " prepared"
	case status.UpdateExecuted:
		return "Update to " + desired + " applied"
	case status.UpdateComplete:
		return "Update to " + desired + " completed"
	}
	return fmt.Sprintf("Completed the %s phase", group)
}

// phaseStartMessage is a secondary condition's message while in progress.
func phaseStartMessage(cond string) string {
	switch cond {
	case status.UpdateCompatible:
		return "Checking that the config can be applied in place"
	case status.Cordoned:
		return "Cordoning node"
	case status.Drained:
		return "Draining node"
	case status.AppliedFilesAndOS:
		return "Writing files, units, SSH keys and OS changes"
	case status.RebootedNode:
		return "Rebooting node"
	case status.ReloadedCRIO:
		return "Reloading crio.service"
	case status.Uncordoned:
		return "Uncordoning node"
	}
	return "In progress"
}
