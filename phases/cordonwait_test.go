package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// An update that waits before its cordon while this daemon's cordon is on
// the node never says Cordoned=False. A cordon the update inherited (from
// the update it replaced after its write) stays, and Cordoned says True,
// reason Waiting, why it stays and what the update waits for. Any other
// (a crash right after the cordon request, an uncordon the API server
// refused) is given back first: the update waits uncordoned, as every
// update does, and cordons again once nothing holds it.
func TestCordonWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inherited bool
		status    metav1.ConditionStatus
		message   string
		calls     string // the cluster's, for the whole run
	}{
		{"inherited: stays, said True", true, metav1.ConditionTrue,
			"Node stays cordoned by the update this one replaced; the update waits: Outside the maintenance windows",
			"cordon,drain"},
		{"unrecorded: given back first", false, metav1.ConditionFalse, "Outside the maintenance windows",
			"uncordon,cordon,drain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
			r.Record.CordonedByUs, r.Record.CordonInherited = true, tc.inherited
			fw := &fakeWaits{hold: phases.Hold{Kind: phases.HoldWindow, Message: "Outside the maintenance windows"}, holds: 3}
			seen := 0
			fw.onCheck = func() {
				if fw.checks < 2 {
					return
				}
				seen++
				c := status.Find(w.last, status.Cordoned)
				if c.Status != tc.status || c.Reason != status.ReasonWaiting || c.Message != tc.message {
					t.Errorf("Cordoned while held: %s %s %q", c.Status, c.Reason, c.Message)
				}
				if got := strings.Join(cl.calls, ","); got != strings.TrimSuffix(tc.calls, ",cordon,drain") &&
					!(tc.inherited && got == "") {
					t.Errorf("cluster calls while held: %q", got)
				}
				if r.Record.CordonedByUs != tc.inherited {
					t.Errorf("cordoned by us while held: %v", r.Record.CordonedByUs)
				}
			}
			r.Env.Waits = fw
			if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
				t.Fatalf("Run: %v", err)
			}
			if seen == 0 {
				t.Fatal("the update never waited")
			}
			if got := strings.Join(cl.calls, ","); got != tc.calls {
				t.Errorf("cluster calls %q, want %q", got, tc.calls)
			}
			if !r.Record.CordonedByUs || r.Record.CordonInherited || !r.Record.Done("cordon") || h.files["/etc/motd"] != "x" {
				t.Errorf("after the wait: cordoned by us %v, steps %+v, files %v", r.Record.CordonedByUs,
					r.Record.Steps, h.files)
			}
		})
	}
}

// A cordon the update could not give back before its wait (the API server
// refuses the uncordon) fails the update, naming the node; the record
// still says the cordon is this daemon's, so the next try gives it back.
func TestCordonNotGivenBackBeforeWait(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &refusingUncordon{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, &cl.cluster, units, w)
	r.Env.Cluster = cl
	r.Record.CordonedByUs = true
	r.Env.Waits = &fakeWaits{hold: phases.Hold{Kind: phases.HoldPaused, Message: "Paused by test"}, holds: 3}
	err := r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "giving back the cordon of node n1 before the update waits: forbidden") {
		t.Fatalf("Run: %v", err)
	}
	if !r.Record.CordonedByUs || len(h.written) != 0 {
		t.Errorf("after the refused uncordon: cordoned by us %v, written %v", r.Record.CordonedByUs, h.written)
	}
}

type refusingUncordon struct{ cluster }

func (c *refusingUncordon) Uncordon(context.Context) error { return errors.New("forbidden") }
