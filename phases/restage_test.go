package phases_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// A finished update's status, lost to a crash before its last write, is
// staged again from the record alone as the run staged it: every step's
// condition and every group's. Updated is the daemon's (markUpdated).
func TestRestageFinished(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	w := &writes{}
	r := newRunner(configs{"a": empty, "b": file("/var/lib/kubelet/config.json", "x")}, h, &cluster{}, &systemdtest.Fake{}, w)
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	final := w.last
	// The status as a crash leaves it: every phase under way.
	lost := make([]metav1.Condition, len(final))
	for i, c := range final {
		c.Status, c.Message = metav1.ConditionUnknown, "under way"
		lost[i] = c
	}
	st := stager(w, lost)
	phases.RestageFinished(phases.All(), r.Record, st)
	for _, want := range final {
		if want.Type == status.Updated || want.Type == status.NodeDegraded {
			continue
		}
		got := st.Find(want.Type)
		if got == nil || got.Status != want.Status || got.Reason != want.Reason || got.Message != want.Message {
			t.Errorf("%s restaged as %+v, want %s %s %q", want.Type, got, want.Status, want.Reason, want.Message)
		}
	}
}
