package phases_test

import (
	"context"
	"errors"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// snapshots records the irreconcilableChanges of every status write.
type snapshots struct {
	writes
	changes [][]mcfgv1.IrreconcilableChangeDiff
}

func (s *snapshots) WriteStatus(ctx context.Context, snap status.Snapshot) error {
	s.changes = append(s.changes, snap.IrreconcilableChanges)
	return s.writes.WriteStatus(ctx, snap)
}

func (s *snapshots) last() []mcfgv1.IrreconcilableChangeDiff { return s.changes[len(s.changes)-1] }

// A refusal as unreconcilable writes status.irreconcilableChanges with the
// failure, in the same request; the next update clears it as it starts.
func TestRunnerIrreconcilableChanges(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units := &cluster{}, &systemdtest.Fake{}
	disks := `{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/vdb","wipeTable":true}]}}`
	r := newRunner(configs{"a": empty, "b": disks, "c": empty}, h, cl, units, &writes{})
	w := &snapshots{}
	r.Status = status.NewStager(w, r.Now, status.Snapshot{Conditions: status.Initial(metav1.Now())})
	err := r.Run(context.Background())
	var ue *plan.UnreconcilableError
	if !errors.As(err, &ue) {
		t.Fatalf("Run: %v, want an unreconcilable change", err)
	}
	before := len(w.changes)
	r.Fail(context.Background(), err)
	want := mcfgv1.IrreconcilableChangeDiff{FieldPath: "spec.config.storage.disks",
		Diff: `[device=/dev/vdb].device: (none) -> "/dev/vdb"; [device=/dev/vdb].wipeTable: (none) -> true`}
	if len(w.changes) != before+1 || len(w.last()) != 1 || w.last()[0] != want {
		t.Fatalf("after Fail: %d writes, changes %+v; want one write with %+v", len(w.changes)-before, w.last(), want)
	}
	if c := status.Find(w.writes.last, status.UpdateCompatible); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("UpdateCompatible = %+v in the same write", c)
	}

	// The next update (the administrator went back to a good config)
	// writes its start without them.
	next := newRunner(configs{"a": empty, "c": empty}, h, cl, units, &writes{})
	next.Status = r.Status
	next.Record = progress.New("a", "c")
	if err := next.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := w.last(); got != nil {
		t.Errorf("after a good update irreconcilableChanges = %+v, want none", got)
	}
}

// A failure that is not a refusal leaves the field as it is.
func TestRunnerOtherFailureKeepsIrreconcilableChanges(t *testing.T) {
	kept := []mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.fips", Diff: "(none) -> true"}}
	w := &snapshots{}
	r := newRunner(configs{"a": empty, "b": empty}, &host{files: map[string]string{}, state: map[string][]byte{}},
		&cluster{}, &systemdtest.Fake{}, &writes{})
	r.Status = status.NewStager(w, r.Now, status.Snapshot{Conditions: status.Initial(metav1.Now()), IrreconcilableChanges: kept})
	r.Fail(context.Background(), errors.New("fetching MachineConfig \"b\": timeout"))
	if len(w.changes) != 1 || len(w.last()) != 1 || w.last()[0] != kept[0] {
		t.Errorf("wrote %+v, want %+v", w.changes, kept)
	}
}
