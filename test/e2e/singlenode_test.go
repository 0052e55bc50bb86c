package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// A single-node cluster (the Node's controlPlaneTopology annotation is
// SingleReplica, as upstream's node controller writes it) reboots into a
// new config without a cordon or a drain, as upstream's daemon does: a
// PodDisruptionBudget that would hold a drain for good does not hold it,
// and the conditions say why there was no drain.
func TestSingleNodeRebootsWithoutDrain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "sno"
	config(t, "rendered-sno-a", ign(nil))
	config(t, "rendered-sno-b", ign(map[string]string{"/etc/nodeconfd-sno.conf": "b\n"}))
	n, log := node(t, name, "rendered-sno-a")
	podsOn(t, name, 2)
	budgetOn(t, "web-"+name) // a drain would never finish
	if err := n.Annotate(ctx, map[string]string{names.ControlPlaneTopology: names.SingleReplica}); err != nil {
		t.Fatal(err)
	}
	cordons := watchCordon(ctx, t, name)
	if err := n.SetDesired(ctx, "rendered-sno-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-sno-b"); err != nil {
		t.Fatal(err)
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2 (one reboot)", b)
	}
	cordons.mu.Lock()
	states := strings.Join(cordons.states, ",")
	cordons.mu.Unlock()
	if strings.Contains(states, "on") {
		t.Errorf("cordon states %s, want never cordoned", states)
	}
	for _, cond := range []string{"Cordoned", "Drained"} {
		if c := log.Condition(cond); c == nil || !strings.Contains(c.Message, plan.SingleNodeNoDrain) {
			t.Errorf("%s = %+v, want it to say %q", cond, c, plan.SingleNodeNoDrain)
		}
	}
}
