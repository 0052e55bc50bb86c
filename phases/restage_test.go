package phases_test

import (
	"context"
	"errors"
	"testing"
	"time"

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

// failingLast fails its write number failAt (1-based), and only that one.
type failingLast struct {
	writes
	failAt int
}

func (w *failingLast) WriteStatus(ctx context.Context, s status.Snapshot) error {
	if w.n+1 == w.failAt {
		w.failAt = 0
		return errors.New("the API server is away")
	}
	return w.writes.WriteStatus(ctx, s)
}

// A finished update whose last status write fails is not failed for it:
// the run ends well (the daemon reports no failure), and what it staged stays for
// the daemon's next report, which writes the run's own status.
func TestLastWriteFailsNotTheUpdate(t *testing.T) {
	run := func(w status.Writer) (*phases.Runner, error) {
		h := &host{files: map[string]string{}, state: map[string][]byte{}}
		r := newRunner(configs{"a": empty, "b": file("/var/lib/kubelet/config.json", "x")}, h, &cluster{}, &systemdtest.Fake{}, &writes{})
		r.Status = status.NewStager(w, time.Now, status.Snapshot{Conditions: status.Initial(metav1.Now())})
		return r, r.Run(context.Background())
	}
	ok := &writes{}
	if _, err := run(ok); err != nil {
		t.Fatal(err)
	}
	flaky := &failingLast{failAt: ok.n}
	r, err := run(flaky)
	if err != nil { // the daemon would report the update failed: Degraded
		t.Fatalf("Run with its last write failing: %v, want nil", err)
	}
	if err := r.Status.Flush(context.Background()); err != nil { // the daemon's next report
		t.Fatal(err)
	}
	for _, want := range ok.last {
		got := status.Find(flaky.last, want.Type)
		if got == nil || got.Status != want.Status || got.Reason != want.Reason || got.Message != want.Message {
			t.Errorf("%s written later as %+v, want %s %s %q", want.Type, got, want.Status, want.Reason, want.Message)
		}
	}
}
