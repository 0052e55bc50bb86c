package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// An update that resumes paused while this daemon's cordon is on the node
// never says Cordoned=False on a cordoned node. Killed right after its
// cordon request (the cordon step not recorded), it gives the cordon back
// and waits uncordoned. Replaced after its write by a new desired config,
// the new update keeps the cordon it inherits, and Cordoned says True,
// reason Waiting, why. Either converges once unpaused.
func TestCordonWhilePaused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, point string
		replaced    bool
	}{
		{"unrecorded cordon", "ran:cordon", false},
		{"inherited cordon", "done:write", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "cw-" + strings.Split(tc.point, ":")[1]
			cordonWhilePaused(t, name, tc.point, tc.replaced)
		})
	}
}

func cordonWhilePaused(t *testing.T, name, point string, replaced bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base, b, c := "rendered-"+name+"-a", "rendered-"+name+"-b", "rendered-"+name+"-c"
	config(t, base, ign(nil))
	config(t, b, ign(map[string]string{"/etc/motd.d/" + name: "b\n"}))
	config(t, c, ign(map[string]string{"/etc/motd.d/" + name: "c\n"}))
	n, log := node(t, name, base)
	if err := killDuring(ctx, n, b, point); err != nil {
		t.Fatal(err)
	}
	if !getNode(t, name).Spec.Unschedulable {
		t.Fatalf("node not cordoned at %s", point)
	}
	want := b
	if replaced {
		want = c
		if err := n.SetDesired(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Annotate(ctx, map[string]string{"nodeconfd.io/pause": "carol: hold"}); err != nil {
		t.Fatal(err)
	}
	from := log.Len()
	if err := n.ResumeDaemon(); err != nil {
		t.Fatal(err)
	}
	paused := `Paused by annotation nodeconfd.io/pause="carol: hold"`
	if err := waitMessage(ctx, log, "Cordoned", "Waiting", paused); err != nil {
		t.Fatal(err)
	}
	checkCordonWhilePaused(t, log, name, replaced, from)
	unpause(ctx, t, name)
	if err := waitCurrent(ctx, log, want); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, n, "/etc/motd.d/"+name); got != strings.TrimPrefix(want, "rendered-"+name+"-")+"\n" {
		t.Errorf("file = %q, want the content of %s", got, want)
	}
	if getNode(t, name).Spec.Unschedulable {
		t.Error("node left cordoned")
	}
}

// checkCordonWhilePaused checks the status of the paused update against the
// node: cordoned and Cordoned=True (and never False since the daemon
// started again, status from on), or uncordoned and Cordoned=False.
func checkCordonWhilePaused(t *testing.T, log *testbed.StatusLog, name string, replaced bool, from int) {
	t.Helper()
	if tr := log.Transitions(from); replaced && slices.Contains(tr, "Cordoned=False") {
		t.Errorf("the inherited cordon was said False on the way: %v", tr)
	}
	cond := log.Condition("Cordoned")
	cordoned := getNode(t, name).Spec.Unschedulable
	switch {
	case replaced && (!cordoned || cond.Status != "True" ||
		!strings.HasPrefix(cond.Message, "Node stays cordoned by an earlier update of this daemon; the update waits: ")):
		t.Errorf("inherited cordon: node cordoned %v, Cordoned %s %q", cordoned, cond.Status, cond.Message)
	case !replaced && (cordoned || cond.Status != "False"):
		t.Errorf("unrecorded cordon: node cordoned %v, Cordoned %s %q", cordoned, cond.Status, cond.Message)
	}
}
