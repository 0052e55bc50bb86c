package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// A node-side refusal (Preflight) fails the update in prepare: before the
// cordon and the first write, with UpdateCompatible
// False naming the field.
func TestRunnerPreflightRefusalBeforeCordon(t *testing.T) {
	refusal := &plan.ConfigError{Object: "b", Field: "spec.config.storage.files[0].user.name", Msg: `unknown user "ghost" on the node`}
	h := &host{files: map[string]string{}, state: map[string][]byte{}, preflightErr: refusal}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w) // a reboot: needs a drain
	err := r.Run(context.Background())
	var ce *plan.ConfigError
	if !errors.As(err, &ce) || ce != refusal {
		t.Fatalf("Run: %v, want the preflight refusal", err)
	}
	r.Fail(context.Background(), err)
	if h.preflights != 1 {
		t.Errorf("%d preflights, want 1", h.preflights)
	}
	if len(cl.calls) != 0 || len(h.written) != 0 || len(units.CallLog()) != 0 {
		t.Errorf("after the refusal: cluster calls %v, written %v, systemd %v", cl.calls, h.written, units.CallLog())
	}
	c := status.Find(w.last, status.UpdateCompatible)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, refusal.Field) {
		t.Errorf("UpdateCompatible = %s %q, want False naming %s", c.Status, c.Message, refusal.Field)
	}
	if d := status.Find(w.last, status.NodeDegraded); d.Status != metav1.ConditionTrue {
		t.Errorf("NodeDegraded = %s", d.Status)
	}
}

// The preflight runs when prepare runs, not when a restart reloads the
// plan (after the reboot, the files are the desired config's own).
func TestRunnerPreflightNotOnReload(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	rec, err := progress.Unmarshal(h.state[progress.FileName])
	if err != nil {
		t.Fatal(err)
	}
	r2 := &phases.Runner{Env: r.Env, Status: stager(w, w.last), Node: "n1", Log: zap.NewNop(), Now: time.Now, Phases: phases.All(), Record: rec}
	if err := r2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.preflights != 1 {
		t.Errorf("%d preflights, want 1", h.preflights)
	}
}
