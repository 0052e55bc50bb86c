package phases_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// events records the Events' messages by reason.
type events map[string]string

func (e events) Event(_, _ bool, reason, message string) { e[reason] = message }

// The reboot's Event counts from the reboot request to the node being
// back, not the moment the new daemon spends confirming the boot.
func TestRebootEventDuration(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	r.Now = func() time.Time { return t0 }
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Reboot.RequestedAt.Equal(t0) {
		t.Fatalf("reboot requested at %v, want %v", rec.Reboot.RequestedAt, t0)
	}
	ev := events{}
	back := t0.Add(38 * time.Second)
	r2 := &phases.Runner{Env: r.Env, Status: stager(w, w.last), Node: "n1", Events: ev, Log: zap.NewNop(), Now: func() time.Time { return back },
		Phases: phases.All(), Record: rec}
	if err := r2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := status.Find(w.last, status.RebootedNode); c.Status != metav1.ConditionTrue {
		t.Fatalf("RebootedNode = %s %q", c.Status, c.Message)
	}
	if got, want := ev[status.RebootedNode], "(38s)"; len(got) < len(want) || got[len(got)-len(want):] != want {
		t.Errorf("RebootedNode Event %q, want it to end in %q", got, want)
	}
}
