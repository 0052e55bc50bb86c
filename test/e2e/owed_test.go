package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// An update written and then replaced before its post action ran (the
// daemon killed after the write, the desired config moved on while it was
// down) leaves files that take effect only through that action. The update
// that replaces it runs the action too, though its own diff needs less: a
// reboot owed to a file with no rule, a CRI-O reload owed to a registries
// file. UpdateCompatible names the config that owes it. A boot after the
// write (the node power-cycled while the daemon was down) paid it: nothing
// more than the new update's own runs.
func TestReplacedAfterWriteGetsItsPostAction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, owedFile, ownFile string
		boots, reloads          int // the node's, from the kill on
		owes                    string
		powerCycle              bool // the node reboots while the daemon is down
	}{
		{"owedboot", "/etc/motd.d/owedboot", "/etc/containers/registries.d/owedboot.yaml", 1, 0, "Reboot", false},
		{"owedcrio", "/etc/containers/registries.d/owedcrio.yaml", "/var/lib/kubelet/config.json", 0, 1, "Reload crio.service", false},
		{"owedpaid", "/etc/motd.d/owedpaid", "/etc/containers/registries.d/owedpaid.yaml", 1, 1, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			base, b, c := "rendered-"+tc.name+"-a", "rendered-"+tc.name+"-b", "rendered-"+tc.name+"-c"
			config(t, base, ign(nil))
			config(t, b, ign(map[string]string{tc.owedFile: "b\n"}))
			config(t, c, ign(map[string]string{tc.owedFile: "b\n", tc.ownFile: "{}\n"}))
			n, log := node(t, tc.name, base)
			if err := killDuring(ctx, n, b, "done:write"); err != nil {
				t.Fatal(err)
			}
			boots := n.Sys.Boots()
			reloads, _ := n.Sys.CRIOReloads()
			if tc.powerCycle {
				_, _ = n.Sys.Exec(ctx, "systemctl", "reboot") // the guest may go before it answers
				if err := n.Sys.WaitBoot(ctx, boots+1); err != nil {
					t.Fatal(err)
				}
			}
			if err := n.SetDesired(ctx, c); err != nil {
				t.Fatal(err)
			}
			if err := n.ResumeDaemon(); err != nil {
				t.Fatal(err)
			}
			if err := waitCurrent(ctx, log, c); err != nil {
				t.Fatal(err)
			}
			r, _ := n.Sys.CRIOReloads()
			if got := n.Sys.Boots() - boots; got != tc.boots || r-reloads != tc.reloads {
				t.Errorf("boots %d, CRI-O reloads %d since the kill; want %d, %d", got, r-reloads, tc.boots, tc.reloads)
			}
			m := log.Condition("UpdateCompatible").Message
			if want := b + " (written, replaced before its post action ran): " + tc.owes + " [owed]"; tc.owes != "" &&
				!strings.Contains(m, want) {
				t.Errorf("UpdateCompatible %q does not say %q", m, want)
			}
			if tc.owes == "" && strings.Contains(m, "[owed]") {
				t.Errorf("UpdateCompatible %q: the boot after the write did not pay it", m)
			}
			if getNode(t, tc.name).Spec.Unschedulable {
				t.Error("node left cordoned")
			}
		})
	}
}
