package e2e

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// budgetOf is the disruption budget of t's daemons: one of its own per
// top-level test, so that tests running side by side never wait for, or
// see, each other's slots. Its slots are the Leases <budgetOf(t)>-0 … in
// the daemon's namespace. Its subtests share it: parallel subtests that
// disrupt their nodes side by side give their daemons a slot each
// (--disruption-slots).
func budgetOf(t testing.TB) string {
	top, _, _ := strings.Cut(t.Name(), "/")
	name := strings.ToLower(strings.TrimPrefix(top, "Test"))
	// The name is a label value (at most 63 characters) and the prefix of
	// the budget's Lease names: keep it short, unique by a hash.
	if len(name) > 32 {
		h := fnv.New32a()
		h.Write([]byte(top))
		name = fmt.Sprintf("%s-%08x", name[:23], h.Sum32())
	}
	return "e2e-" + name
}

// ownBudget returns opts with the daemon's --disruption-budget set to t's
// own (budgetOf). A --disruption-budget in opts.ExtraArgs still wins: the
// last of a repeated flag counts.
func ownBudget(t testing.TB, opts testbed.NodeOptions) testbed.NodeOptions {
	opts.ExtraArgs = append([]string{"--disruption-budget", budgetOf(t)}, opts.ExtraArgs...)
	return opts
}
