package phases_test

import (
	"context"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// The post action's message says "Drained" only after the update's drain
// step drained the node: with --once-from's list there is none.
func TestPostActionSaysDrainedOnlyAfterADrain(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    phases.ListOptions
		want string
	}{
		{"cluster", phases.ListOptions{}, "Drained; Restarted foo.service"},
		{"once-from", phases.ListOptions{NoCluster: true}, "Restarted foo.service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			r := newRunner(configs{"a": empty, "b": file("/etc/foo.conf", "x")}, h, cl, units, w)
			r.Phases = phases.List(tc.o)
			r.Env.Policy = plan.Policy{Files: []plan.FileRule{{Path: "/etc/foo.conf",
				Actions: []plan.Action{{Type: plan.ActDrain}, {Type: plan.ActRestart, Unit: "foo.service"}}}}}
			units.SetEnabled("foo.service", "enabled")
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if c := status.Find(w.last, status.UpdatePostActionComplete); c.Message != tc.want {
				t.Errorf("UpdatePostActionComplete %q, want %q", c.Message, tc.want)
			}
		})
	}
}
