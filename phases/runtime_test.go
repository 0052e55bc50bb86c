package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// An update on a node of each runtime (Runner.Runtime, from the Node's
// containerRuntimeVersion): containerd's files follow containerd's rules on
// a containerd node and reboot elsewhere; CRI-O's reload rules reload
// CRI-O on a CRI-O node (and an unknown runtime) and do nothing on a
// containerd node. A containerd restart is reported as a unit's restart,
// never as ReloadedCRIO.
func TestRunnerPostActionPerRuntime(t *testing.T) {
	const (
		hosts  = "/etc/containerd/certs.d/registry.example.com/hosts.toml"
		config = "/etc/containerd/config.toml"
		dropIn = "/etc/containerd/conf.d/10-x.toml"
		regsD  = "/etc/containers/registries.d/a.yaml"
	)
	for _, tc := range []struct {
		name    string
		runtime plan.Runtime
		path    string
		calls   []string // systemd calls
		cluster []string
		post    string // UpdatePostActionComplete's message; "" for a reboot
		crio    bool   // ReloadedCRIO True (else NotRequired)
		event   string // the Event's reason, if any
	}{
		{"certs.d on containerd", plan.RuntimeContainerd, hosts, nil, []string{"state b Done"},
			"Changes need no reboot or reload", false, ""},
		{"config.toml on containerd", plan.RuntimeContainerd, config,
			[]string{"is-enabled containerd.service", "boot-id", "restart containerd.service"}, []string{"state b Done"},
			"Restarted containerd.service", false, "ServiceRestart"},
		{"conf.d on containerd", plan.RuntimeContainerd, dropIn,
			[]string{"is-enabled containerd.service", "boot-id", "restart containerd.service"}, []string{"state b Done"},
			"Restarted containerd.service", false, "ServiceRestart"},
		{"registries.d on containerd", plan.RuntimeContainerd, regsD, nil, []string{"state b Done"},
			"Changes need no reboot or reload", false, ""},
		{"registries.d on CRI-O", plan.RuntimeCRIO, regsD,
			[]string{"is-enabled crio.service", "boot-id", "reload crio.service"}, []string{"state b Done"},
			"Reloaded crio.service", true, "ServiceReload"},
		{"registries.d on an unknown runtime", plan.RuntimeUnknown, regsD,
			[]string{"is-enabled crio.service", "boot-id", "reload crio.service"}, []string{"state b Done"},
			"Reloaded crio.service", true, "ServiceReload"},
		{"certs.d on CRI-O", plan.RuntimeCRIO, hosts, []string{"boot-id", "boot-id", "reboot"}, []string{"cordon", "drain"}, "", false, ""},
		{"config.toml on CRI-O", plan.RuntimeCRIO, config, []string{"boot-id", "boot-id", "reboot"}, []string{"cordon", "drain"}, "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{files: map[string]string{}, state: map[string][]byte{}}
			cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
			r := newRunner(configs{"a": empty, "b": file(tc.path, "x")}, h, cl, units, w)
			r.Runtime = tc.runtime
			ev := events{}
			r.Events = ev
			err := r.Run(context.Background())
			if tc.post == "" {
				if !errors.Is(err, phases.ErrRebooting) {
					t.Fatalf("Run: %v, want the reboot", err)
				}
			} else if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := strings.Join(units.CallLog(), ","); got != strings.Join(tc.calls, ",") {
				t.Errorf("systemd calls %v, want %v", units.CallLog(), tc.calls)
			}
			if got := strings.Join(cl.calls, ","); got != strings.Join(tc.cluster, ",") {
				t.Errorf("cluster calls %v, want %v (a drain only for the reboot)", cl.calls, tc.cluster)
			}
			if tc.post == "" {
				return
			}
			if c := status.Find(w.last, status.UpdatePostActionComplete); c.Status != metav1.ConditionTrue || c.Message != tc.post {
				t.Errorf("UpdatePostActionComplete %s %q, want True %q", c.Status, c.Message, tc.post)
			}
			c := status.Find(w.last, status.ReloadedCRIO)
			if got := c.Status == metav1.ConditionTrue; got != tc.crio || (!tc.crio && c.Reason != status.ReasonNotRequired) {
				t.Errorf("ReloadedCRIO %s %s %q, want True %v (else NotRequired)", c.Status, c.Reason, c.Message, tc.crio)
			}
			for _, reason := range []string{"ServiceReload", "ServiceRestart"} {
				if _, got := ev[reason]; got != (reason == tc.event) {
					t.Errorf("Event %s recorded %v (%v), want only %q", reason, got, ev, tc.event)
				}
			}
			if tc.event == "ServiceRestart" && ev["ServiceRestart"] != "Config changes do not require reboot. Service containerd.service was restarted." {
				t.Errorf("ServiceRestart Event %q", ev["ServiceRestart"])
			}
		})
	}
}
