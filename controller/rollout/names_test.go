package rollout_test

import (
	"testing"

	"github.com/nodeconfd/nodeconfd/controller/rollout"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/waits"
	"github.com/nodeconfd/nodeconfd/phases"
)

// TestNamesMatchTheDaemon checks that the names this package repeats (to
// stay free of client-go) are the daemon's.
func TestNamesMatchTheDaemon(t *testing.T) {
	for _, c := range []struct{ name, ours, daemons string }{
		{"CurrentConfig", rollout.CurrentConfig, kube.CurrentConfig},
		{"DesiredConfig", rollout.DesiredConfig, kube.DesiredConfig},
		{"State", rollout.State, kube.State},
		{"Reason", rollout.Reason, kube.Reason},
		{"FailedConfig", rollout.FailedConfig, kube.FailedConfig},
		{"PauseAnnotation", rollout.PauseAnnotation, waits.PauseAnnotation},
		{"RebootRequested", rollout.RebootRequested, kube.RebootRequested},
		{"RebootGranted", rollout.RebootGranted, kube.RebootGranted},
		{"StateDone", rollout.StateDone, phases.StateDone},
		{"StateWorking", rollout.StateWorking, phases.StateWorking},
		{"StateDegraded", rollout.StateDegraded, phases.StateDegraded},
		{"StateUnreconcilable", rollout.StateUnreconcilable, phases.StateUnreconcilable},
	} {
		if c.ours != c.daemons {
			t.Errorf("%s: %q here, %q in the daemon", c.name, c.ours, c.daemons)
		}
	}
}
