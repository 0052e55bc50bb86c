package phases_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// probe is a fake health probe: the command fails while bad says so.
type probe struct {
	bad     func() bool
	failed  []string
	cleared []string
}

func (p *probe) NodeReady(context.Context, time.Time) (bool, string, error) { return true, "", nil }
func (p *probe) Unit(context.Context, string) (phases.UnitHealth, error) {
	return phases.UnitHealth{LoadState: "loaded", ActiveState: "active", SubState: "running"}, nil
}
func (p *probe) Command(context.Context, []string) error {
	if p.bad != nil && p.bad() {
		return errors.New("exit status 1")
	}
	return nil
}
func (p *probe) SetFailedConfig(_ context.Context, n string) error {
	p.failed = append(p.failed, n)
	return nil
}
func (p *probe) ClearFailedConfig(_ context.Context, n string) error {
	p.cleared = append(p.cleared, n)
	return nil
}
func (p *probe) FailedOn(context.Context, string) (string, error)            { return "", nil }
func (p *probe) WaitNotFailedOn(context.Context, string, func(string)) error { return nil }

func gateRunner(t *testing.T, p *probe) (*phases.Runner, *host, *cluster, *writes) {
	t.Helper()
	h := &host{files: map[string]string{"/var/lib/kubelet/config.json": "a"}, state: map[string][]byte{}}
	cl, w := &cluster{}, &writes{}
	cfgs := configs{"a": file("/var/lib/kubelet/config.json", "a"), "b": file("/var/lib/kubelet/config.json", "b")}
	r := newRunner(cfgs, h, cl, &systemdtest.Fake{}, w)
	r.Env.Health = &phases.HealthGate{Probe: p, Command: []string{"/bin/check"}, Timeout: 50 * time.Millisecond,
		Interval: time.Millisecond}
	return r, h, cl, w
}

// A rebootless update whose check command fails is rolled back through a
// new journal, held, and reported; one whose check passes completes.
func TestHealthGateRollsBackRebootless(t *testing.T) {
	p := &probe{}
	r, h, cl, w := gateRunner(t, p)
	p.bad = func() bool { return h.files["/var/lib/kubelet/config.json"] == "b" }
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRolledBack) {
		t.Fatalf("Run: %v, want ErrRolledBack", err)
	}
	if got := h.files["/var/lib/kubelet/config.json"]; got != "a" {
		t.Errorf("after the rollback the file is %q, want a", got)
	}
	if len(h.pending) != 0 {
		t.Errorf("journals left: %v", h.pending)
	}
	if strings.Join(p.failed, ",") != "b" {
		t.Errorf("failed config recorded %v", p.failed)
	}
	if len(cl.calls) != 0 || !slices.Contains(cl.states, "Degraded") {
		t.Errorf("cluster calls %v, states %v", cl.calls, cl.states)
	}
	c := status.Find(w.last, status.HealthChecked)
	if c.Status != metav1.ConditionFalse || c.Reason != status.ReasonRolledBack ||
		!strings.Contains(c.Message, "the check command /bin/check to succeed: exit status 1") ||
		!strings.Contains(c.Message, "Rolled back to a: Restored 1 file") {
		t.Errorf("HealthChecked = %s %s %q", c.Status, c.Reason, c.Message)
	}
	if d := status.Find(w.last, status.NodeDegraded); d.Status != metav1.ConditionTrue || d.Reason != status.ReasonHealthCheckFailed {
		t.Errorf("NodeDegraded = %s %s", d.Status, d.Reason)
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil || !rec.RolledBack() || rec.Done("finish") {
		t.Fatalf("record: %+v, %v", rec, err)
	}
	// The daemon stages KeptStatus again when the node keeps its config: on
	// the status the rollback wrote it changes nothing, so writes nothing.
	kept, n := stager(w, w.last), w.n
	phases.KeptStatus(rec).StageIn(kept)
	if err := kept.Flush(context.Background()); err != nil || w.n != n {
		t.Errorf("KeptStatus differs from the rollback's status (%d writes, %v)", w.n-n, err)
	}

	p = &probe{}
	r, h, _, w = gateRunner(t, p)
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("Run with a passing check: %v", err)
	}
	if c := status.Find(w.last, status.HealthChecked); c.Status != metav1.ConditionTrue ||
		!strings.Contains(c.Message, "check command /bin/check succeeded") {
		t.Errorf("HealthChecked = %s %q", c.Status, c.Message)
	}
	if h.files["/var/lib/kubelet/config.json"] != "b" || strings.Join(p.cleared, ",") != "b" {
		t.Errorf("file %q, cleared %v", h.files["/var/lib/kubelet/config.json"], p.cleared)
	}
}

func TestJudgeUnit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		st       phases.UnitHealth
		optional bool
		healthy  bool
	}{
		{"active", phases.UnitHealth{LoadState: "loaded", ActiveState: "active", SubState: "running"}, false, true},
		{"failed", phases.UnitHealth{LoadState: "loaded", ActiveState: "failed", SubState: "failed"}, false, false},
		{"restarting", phases.UnitHealth{LoadState: "loaded", ActiveState: "activating", SubState: "auto-restart", Restarts: 3}, false, false},
		{"unknown", phases.UnitHealth{LoadState: "not-found", ActiveState: "inactive"}, false, false},
		{"unknown after a rollback", phases.UnitHealth{LoadState: "not-found", ActiveState: "inactive"}, true, true},
	} {
		if got := phases.UnitHealthy("u.service", tc.st, tc.optional); got != tc.healthy {
			t.Errorf("%s: healthy %v, want %v", tc.name, got, tc.healthy)
		}
	}
}

func TestRollbackTxnID(t *testing.T) {
	if id := phases.RollbackTxnID("rendered-x"); id != "rollback-rendered-x" {
		t.Errorf("id %q", id)
	}
	if id := phases.RollbackTxnID(strings.Repeat("x", 253)); len(id) > 255 || !strings.HasPrefix(id, "rollback-") {
		t.Errorf("long id %q", id)
	}
}
