package main

import (
	"strings"
	"testing"
)

// The flags of the Lease budget are refused, each saying what replaced it,
// whatever their value; the help no longer shows them.
func TestRemovedBudgetFlagsRefused(t *testing.T) {
	for _, tc := range []struct{ args []string }{
		{[]string{"--disruption-budget", "nodeconfd-disruption"}},
		{[]string{"--disruption-slots=2"}},
		{[]string{"--disruption-lease-duration", "10m"}},
		{[]string{"--disruption-soak-time=5m"}},
		{[]string{"-disruption-slots", "not-a-number"}},
	} {
		_, err := parseFlags(append([]string{"--node-name", "n1"}, tc.args...))
		name := strings.TrimLeft(strings.SplitN(tc.args[0], "=", 2)[0], "-")
		if err == nil || !strings.Contains(err.Error(), "--"+name+" was removed") ||
			!strings.Contains(err.Error(), "nodeconfd controller") || !strings.Contains(err.Error(), "MachineConfigPool") {
			t.Errorf("%v: %v, want the flag refused naming the pool and the controller", tc.args, err)
		}
	}
	if _, err := parseFlags([]string{"--node-name", "n1"}); err != nil {
		t.Errorf("without the removed flags: %v", err)
	}
	if out := startHelp(t); strings.Contains(out, "--disruption-") {
		t.Errorf("the help shows a removed flag:\n%s", out)
	}
}
