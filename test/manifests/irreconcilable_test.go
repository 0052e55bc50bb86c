package manifests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// The CRD keeps status.irreconcilableChanges (copied from the TechPreview
// variant: a field the schema lacked would be pruned), holds it to the
// API's limits, and takes what the daemon maps a refusal to, even at
// those limits.
func TestMachineConfigNodeIrreconcilableChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := start(ctx, t)
	api := mcfgclient.NewForConfigOrDie(cp.RestConfig()).MachineconfigurationV1().MachineConfigNodes()
	mcn, err := api.Create(ctx, newMCN("worker-0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mcn.Status.Conditions = status.Initial(metav1.Now())

	// What the daemon writes for a refusal at the limits: 40 fields, one
	// of them with a long diff, keys with selectors.
	ue := &plan.UnreconcilableError{Object: "rendered-worker-2", Desired: map[string]string{}}
	for i := 0; i < 40; i++ {
		f := fmt.Sprintf("spec.config.storage.section%02d[name=x/y z]", i)
		ue.Fields = append(ue.Fields, f)
		ue.Desired[f] = fmt.Sprintf(`[{"path":"/a/%02d","mode":420}]`, i)
	}
	long := "spec.config.storage.directories"
	ue.Fields = append(ue.Fields, long)
	var dirs []string
	for i := 0; i < 200; i++ {
		dirs = append(dirs, fmt.Sprintf(`{"path":"/var/lib/%03d/%s"}`, i, strings.Repeat("d", 30)))
	}
	ue.Desired[long] = "[" + strings.Join(dirs, ",") + "]"
	changes := phases.IrreconcilableChanges(ue)
	mcn.Status.IrreconcilableChanges = changes
	stored, err := api.UpdateStatus(ctx, mcn, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("the daemon's entries at the API's limits were refused: %v", err)
	}
	if len(stored.Status.IrreconcilableChanges) != 32 {
		t.Fatalf("stored %d entries, want 32 (not pruned)", len(stored.Status.IrreconcilableChanges))
	}

	for _, bad := range []struct {
		name    string
		changes []mcfgv1.IrreconcilableChangeDiff
		want    string
	}{
		{"selector in fieldPath", []mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.config.passwd.users[name=core]", Diff: "x"}},
			"The fieldPath must consist only of alphanumeric characters"},
		{"not under spec", []mcfgv1.IrreconcilableChangeDiff{{FieldPath: "status.x", Diff: "x"}}, "The fieldPath must start with `spec.`"},
		{"diff too long", []mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.fips", Diff: strings.Repeat("x", 4097)}}, "4096"},
		{"too many", make33(), "must have at most 32 items"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			probe := stored.DeepCopy()
			probe.Status.IrreconcilableChanges = bad.changes
			_, err := api.UpdateStatus(ctx, probe, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%v, want Invalid saying %q", err, bad.want)
			}
		})
	}
}

func make33() []mcfgv1.IrreconcilableChangeDiff {
	var out []mcfgv1.IrreconcilableChangeDiff
	for i := 0; i < 33; i++ {
		out = append(out, mcfgv1.IrreconcilableChangeDiff{FieldPath: fmt.Sprintf("spec.config.x%d", i), Diff: "x"})
	}
	return out
}
