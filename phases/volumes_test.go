package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// The reboot waits, after the drain, for the drained pods' volumes to be
// detached, saying so in RebootedNode (False, Waiting); once they are, or
// once the wait is over, it reboots.
func TestRebootWaitsForVolumes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		attached []int // what Attached says, call by call (then the last)
		timeout  time.Duration
		calls    int
	}{
		{"nothing attached", []int{0}, time.Minute, 1},
		{"detached on the third look", []int{2, 1, 0}, time.Minute, 3},
		{"still attached past the timeout", []int{1}, 30 * time.Millisecond, 0},
		{"no wait", []int{1}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
			var msgs []string
			calls := 0
			r.Env.Volumes = &phases.VolumeWait{Timeout: tc.timeout, Every: time.Millisecond,
				Attached: func(context.Context) ([]string, error) {
					n := tc.attached[min(calls, len(tc.attached)-1)]
					calls++
					if c := status.Find(w.last, status.RebootedNode); c != nil && c.Reason == status.ReasonWaiting {
						msgs = append(msgs, c.Message)
					}
					return make([]string, n), nil
				}}
			if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
				t.Fatalf("Run: %v, want a reboot", err)
			}
			if tc.calls > 0 && calls != tc.calls {
				t.Errorf("Attached asked %d times, want %d", calls, tc.calls)
			}
			if tc.timeout == 0 && calls != 0 {
				t.Errorf("Attached asked %d times with no wait", calls)
			}
			if tc.name == "detached on the third look" &&
				(len(msgs) != 2 || !strings.HasPrefix(msgs[0], "Waiting for 2 volumes to detach before the reboot")) {
				t.Errorf("RebootedNode said %q while waiting", msgs)
			}
			if units.CallLog()[len(units.CallLog())-1] != "reboot" {
				t.Errorf("systemd calls %v, want a reboot last", units.CallLog())
			}
		})
	}
}
