package phases_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// cordonWatch is a status writer that checks every write against the
// node's cordon as the fake cluster has it: it fails a Cordoned=False
// written while this daemon's cordon is on.
type cordonWatch struct {
	writes
	t  *testing.T
	cl *cluster
	on bool // the node's cordon before the cluster's first call
}

func (c *cordonWatch) WriteStatus(ctx context.Context, s status.Snapshot) error {
	on := c.on
	for _, call := range c.cl.calls {
		switch call {
		case "cordon":
			on = true
		case "uncordon":
			on = false
		}
	}
	if cond := status.Find(s.Conditions, status.Cordoned); on && cond.Status == metav1.ConditionFalse {
		c.t.Errorf("write %d says Cordoned=False (%s %q) on a cordoned node", c.n+1, cond.Reason, cond.Message)
	}
	return c.writes.WriteStatus(ctx, s)
}

// cordonedRunner is a runner of an update from a to b (a reboot) whose
// record says this daemon's cordon is on the node: its own (an earlier try
// cut short before its step was recorded) or inherited.
func cordonedRunner(t *testing.T, own bool, cfgs configs) (*phases.Runner, *cluster, *cordonWatch, *host) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl := &cluster{}
	cw := &cordonWatch{t: t, cl: cl, on: true}
	r := newRunner(cfgs, h, cl, &systemdtest.Fake{}, &cw.writes)
	r.Status = status.NewStager(cw, time.Now, status.Snapshot{Conditions: status.Initial(metav1.Now())})
	r.Record.Cordon.ByUs, r.Record.Cordon.Own = true, own
	return r, cl, cw, h
}

// An update that waits before its cordon while this daemon's cordon is on
// the node never says Cordoned=False. A cordon it inherited (from the
// update it replaced after its write) stays, and Cordoned says True,
// reason Waiting, why it stays and what the update waits for. Its own
// cordon, that its step did not record (a crash right after the cordon
// request, an uncordon the API server refused), is given back first: the
// update waits uncordoned, as every update does, and cordons again once
// nothing holds it.
func TestCordonWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		own     bool
		status  metav1.ConditionStatus
		message string
		calls   string // the cluster's, for the whole run
	}{
		{"inherited: stays, said True", false, metav1.ConditionTrue,
			"Node stays cordoned by an earlier update of this daemon; the update waits: Outside the maintenance windows",
			"cordon,drain"},
		{"own, unrecorded: given back first", true, metav1.ConditionFalse, "Outside the maintenance windows",
			"uncordon,cordon,drain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, cl, cw, h := cordonedRunner(t, tc.own, configs{"a": empty, "b": file("/etc/motd", "x")})
			fw := &fakeWaits{hold: phases.Hold{Kind: phases.HoldWindow, Message: "Outside the maintenance windows"}, holds: 3}
			seen := 0
			fw.onCheck = func() {
				if fw.checks < 2 {
					return
				}
				seen++
				c := status.Find(cw.last, status.Cordoned)
				if c.Status != tc.status || c.Reason != status.ReasonWaiting || c.Message != tc.message {
					t.Errorf("Cordoned while held: %s %s %q", c.Status, c.Reason, c.Message)
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
			if !r.Record.Cordon.ByUs || r.Record.Cordon.Own != tc.own || !r.Record.Done("cordon") || h.files["/etc/motd"] != "x" {
				t.Errorf("after the wait: record %+v, files %v", r.Record, h.files)
			}
		})
	}
}

// Nor does it say Cordoned=False before its waits (detect's reset), when a
// step before the cordon fails, or while it cannot check what it waits for
// (no hold known: nothing is given back).
func TestCordonSaidBeforeItsStep(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own=%v", own), func(t *testing.T) {
			r, _, cw, _ := cordonedRunner(t, own, configs{"a": empty}) // b is missing: prepare fails
			if err := r.Run(context.Background()); err == nil {
				t.Fatal("Run: no error for a missing config")
			}
			if cw.n == 0 {
				t.Fatal("no status written")
			}
			r, cl, cw, _ := cordonedRunner(t, own, configs{"a": empty, "b": file("/etc/motd", "x")})
			r.Env.Waits = &fakeWaits{failFirst: true}
			if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
				t.Fatalf("Run: %v", err)
			}
			if got := strings.Join(cl.calls, ","); got != "cordon,drain" {
				t.Errorf("cluster calls %q: given back with no hold known", got)
			}
			if cw.n == 0 {
				t.Fatal("no status written")
			}
		})
	}
}

// A cordon the update could not give back before its wait (the API server
// refuses the uncordon) fails the update, naming the node; the record
// still says the cordon is this daemon's own, so the next try gives it back.
func TestCordonNotGivenBackBeforeWait(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &refusingUncordon{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, &cl.cluster, units, w)
	r.Env.Cluster = cl
	r.Record.Cordon.ByUs, r.Record.Cordon.Own = true, true
	r.Env.Waits = &fakeWaits{hold: phases.Hold{Kind: phases.HoldPaused, Message: "Paused by test"}, holds: 3}
	err := r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "giving back the cordon of node n1 before the update waits: forbidden") {
		t.Fatalf("Run: %v", err)
	}
	if !r.Record.Cordon.ByUs || !r.Record.Cordon.Own || len(h.written) != 0 {
		t.Errorf("after the refused uncordon: record %+v, written %v", r.Record, h.written)
	}
}

type refusingUncordon struct{ cluster }

func (c *refusingUncordon) Uncordon(context.Context) error { return errors.New("forbidden") }

// A cordon of an earlier update stays when the update that holds it is cut
// (here a pause during its drain; a new desired config and a failed drain
// give back through the same giveBack): the node holds what that earlier
// update wrote until one completes. Its own cordon is lifted.
func TestEarlierCordonOutlivesCuts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		own   bool
		calls string
	}{
		{"earlier update's: stays", false, "cordon,drain"},
		{"own: given back", true, "cordon,drain,uncordon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, cl, _, _ := cordonedRunner(t, tc.own, configs{"a": empty, "b": file("/etc/motd", "x")})
			cl.drainBlocks = true
			fw := &fakeWaits{}
			cl.onDrain = func() { fw.mu.Lock(); fw.paused = true; fw.mu.Unlock() }
			r.Env.Waits = fw
			if err := r.Run(context.Background()); !errors.Is(err, phases.ErrPaused) {
				t.Fatalf("Run: %v, want ErrPaused", err)
			}
			if got := strings.Join(cl.calls, ","); got != tc.calls {
				t.Errorf("cluster calls %q, want %q", got, tc.calls)
			}
			if r.Record.Cordon.ByUs == tc.own || r.Record.Done("cordon") {
				t.Errorf("after the cut: record %+v", r.Record)
			}
		})
	}
}

// A resumed update whose status was reset meanwhile (its MachineConfigNode
// created again) says the cordon it holds before its cordon step too.
func TestCordonSaidAfterStatusReset(t *testing.T) {
	r, _, cw, _ := cordonedRunner(t, false, configs{"a": empty, "b": file("/etc/motd", "x")})
	r.Record.MarkDone(progress.Step{Name: progress.StepDetect, Message: "detected"})
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	if cw.n == 0 {
		t.Fatal("no status written")
	}
}
