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
// file. UpdateCompatible names the config that owes it.
func TestReplacedAfterWriteGetsItsPostAction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, owedFile, ownFile string
		boots, reloads          int // the node's, from the kill on
		owes                    string
	}{
		{"owedboot", "/etc/motd.d/owedboot", "/etc/containers/registries.d/owedboot.yaml", 1, 0, "Reboot"},
		{"owedcrio", "/etc/containers/registries.d/owedcrio.yaml", "/var/lib/kubelet/config.json", 0, 1, "Reload crio.service"},
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
			if err := n.StopDaemon(); err != nil {
				t.Fatal(err)
			}
			killed := n.ArmKill("done:write")
			if err := n.SetDesired(ctx, b); err != nil {
				t.Fatal(err)
			}
			if err := n.StartDaemon(); err != nil {
				t.Fatal(err)
			}
			if err := n.WaitKilled(ctx, killed); err != nil {
				t.Fatal(err)
			}
			boots := n.Sys.Boots()
			reloads, _ := n.Sys.CRIOReloads()
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
			want := b + " (written, replaced before its post action ran): " + tc.owes + " [owed]"
			if m := log.Condition("UpdateCompatible").Message; !strings.Contains(m, want) {
				t.Errorf("UpdateCompatible %q does not say %q", m, want)
			}
			if getNode(t, tc.name).Spec.Unschedulable {
				t.Error("node left cordoned")
			}
		})
	}
}
