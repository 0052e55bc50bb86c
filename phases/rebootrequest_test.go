package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// A reboot on request is an update of the node's config to itself whose
// post action is a reboot: waits, cordon, drain, nothing written, reboot;
// the status says it is a reboot someone asked for.
func TestRebootOnRequest(t *testing.T) {
	const cfg = `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,1"}}]}}`
	h := &host{files: map[string]string{"/etc/a": "1"}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": cfg}, h, cl, units, w)
	r.Record = progress.New("a", "a")
	r.Record.RebootRequest = "alice: kernel 6.12.9"
	r.NodeCurrent = "a"
	err := r.Run(context.Background())
	if !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v, want ErrRebooting", err)
	}
	if got := strings.Join(units.CallLog(), ","); got != "boot-id,boot-id,reboot" {
		t.Errorf("systemd calls %s, want boot-id,boot-id,reboot", got)
	}
	if got := strings.Join(cl.calls, ","); got != "cordon,drain" {
		t.Errorf("cluster calls %s, want cordon,drain", got)
	}
	if len(h.written) != 0 {
		t.Errorf("files written: %v", h.written)
	}
	if c := status.Find(w.last, status.Updated); c.Status != metav1.ConditionFalse ||
		c.Message != "Node reboot requested (alice: kernel 6.12.9); config a unchanged" {
		t.Errorf("Updated = %s %q", c.Status, c.Message)
	}
	if c := status.Find(w.last, status.UpdateCompatible); !strings.Contains(c.Message,
		"Post action: Reboot; drain required; no changes; reasons: reboot requested (alice: kernel 6.12.9)") {
		t.Errorf("UpdateCompatible %q", c.Message)
	}
}

// A long or hostile request is quoted short and printable in the status.
func TestRebootRequestText(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": `{"ignition":{"version":"3.4.0"}}`}, h, cl, units, w)
	r.Record = progress.New("a", "a")
	r.Record.RebootRequest = "bob\n\u202eevil " + strings.Repeat("x", 100000)
	r.NodeCurrent = "a"
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	c := status.Find(w.last, status.Updated)
	if len(c.Message) > 400 || strings.ContainsAny(c.Message, "\n\u202e") || !strings.Contains(c.Message, "reboot requested (bob  evil xxx") {
		t.Errorf("Updated message (%d bytes) %.120q", len(c.Message), c.Message)
	}
}
