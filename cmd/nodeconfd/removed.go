package main

import (
	"flag"
	"fmt"
)

// removedFlags are the flags of the cluster-wide disruption budget of
// Leases, which the daemon no longer keeps (issue 26): who updates next is
// decided per MachineConfigPool by nodeconfd controller. They are still
// parsed, so that a DaemonSet that sets one fails at once saying what
// replaced it, rather than as an unknown flag.
func removedFlags() map[string]string {
	const bound = "the MachineConfigPool's spec.maxUnavailable"
	return map[string]string{
		"disruption-budget": "the daemon keeps no disruption budget of Leases any more: how many nodes of a pool " +
			"update at once is " + bound + ", enforced by nodeconfd controller",
		"disruption-slots": "the daemon keeps no disruption slots any more: how many nodes of a pool may be " +
			"unavailable at once is " + bound + ", enforced by nodeconfd controller",
		"disruption-lease-duration": "the daemon holds no disruption Lease any more: how many nodes of a pool " +
			"update at once is " + bound + ", enforced by nodeconfd controller",
		"disruption-soak-time": "the daemon keeps no disruption slot to soak any more: the soak time is the " +
			"MachineConfigPool's, waited by nodeconfd controller before it hands the next node a config",
	}
}

// removedFlag is the value of a removed flag: it records that it was set,
// and checkRemoved refuses it once the flags are parsed.
type removedFlag struct {
	name string
	used *[]string
}

func (r removedFlag) String() string { return "" }

func (r removedFlag) Set(string) error {
	*r.used = append(*r.used, r.name)
	return nil
}

// addRemovedFlags registers the removed flags on fs; the returned slice
// fills with those set, in order.
func addRemovedFlags(fs *flag.FlagSet) *[]string {
	used := &[]string{}
	for name, why := range removedFlags() {
		fs.Var(removedFlag{name: name, used: used}, name, "removed: "+why)
	}
	return used
}

// checkRemoved refuses the first removed flag set.
func checkRemoved(used []string) error {
	if len(used) == 0 {
		return nil
	}
	name := used[0]
	return fmt.Errorf("--%s was removed: %s; remove the flag from the daemon's arguments (see \"Migrating from the "+
		"Lease budget\" in docs/operations.md)", name, removedFlags()[name])
}

// isRemoved reports whether f is a removed flag (not shown in the help).
func isRemoved(f *flag.Flag) bool {
	_, ok := f.Value.(removedFlag)
	return ok
}
