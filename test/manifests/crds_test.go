package manifests

import (
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestMachineConfigCRUD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := start(ctx, t)
	api := mcfgclient.NewForConfigOrDie(cp.RestConfig()).MachineconfigurationV1().MachineConfigs()

	mc := &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-1"},
		Spec: mcfgv1.MachineConfigSpec{
			Config:          runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/motd","contents":{"source":"data:,hello"}}]}}`)},
			OSImageURL:      "quay.io/example/os@sha256:0000000000000000000000000000000000000000000000000000000000000000",
			KernelArguments: []string{"nosmt"},
		},
	}
	created, err := api.Create(ctx, mc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := api.Get(ctx, mc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The API server stores the Ignition config as a JSON object: same content, keys reordered.
	if !sameJSON(t, got.Spec.Config.Raw, mc.Spec.Config.Raw) || got.Spec.OSImageURL != mc.Spec.OSImageURL {
		t.Errorf("read back %+v, want %+v", got.Spec, mc.Spec)
	}
	got.Spec.KernelArguments = append(got.Spec.KernelArguments, "mitigations=off")
	updated, err := api.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ResourceVersion == created.ResourceVersion || len(updated.Spec.KernelArguments) != 2 {
		t.Errorf("update not stored: %+v", updated.Spec)
	}
	if err := api.Delete(ctx, mc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Get(ctx, mc.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

func TestMachineConfigNodeCRUD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := start(ctx, t)
	api := mcfgclient.NewForConfigOrDie(cp.RestConfig()).MachineconfigurationV1().MachineConfigNodes()

	t.Run("NameMustMatchNode", func(t *testing.T) {
		mcn := newMCN("worker-0")
		mcn.Spec.Node.Name = "worker-1"
		_, err := api.Create(ctx, mcn, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.node.name should match metadata.name") {
			t.Fatalf("create with a mismatched node name: %v, want Invalid", err)
		}
	})

	mcn, err := api.Create(ctx, newMCN("worker-0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	mcn.Spec.ConfigVersion.Desired = "rendered-worker-2"
	if mcn, err = api.Update(ctx, mcn, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if mcn.Generation != 2 {
		t.Errorf("generation %d after a spec update, want 2", mcn.Generation)
	}

	// Status goes through the status subresource only.
	now := metav1.Now()
	mcn.Status.ObservedGeneration = mcn.Generation
	mcn.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: "rendered-worker-1", Desired: "rendered-worker-2"}
	for _, c := range []struct{ typ, status string }{
		{"Updated", "False"}, {"UpdatePrepared", "True"}, {"UpdateExecuted", "Unknown"},
		{"UpdatePostActionComplete", "False"}, {"UpdateComplete", "False"}, {"Resumed", "False"},
		{"UpdateCompatible", "True"}, {"Cordoned", "True"}, {"Drained", "Unknown"},
	} {
		meta.SetStatusCondition(&mcn.Status.Conditions, metav1.Condition{
			Type: c.typ, Status: metav1.ConditionStatus(c.status), Reason: c.typ, Message: "test", LastTransitionTime: now,
		})
	}
	if mcn, err = api.UpdateStatus(ctx, mcn, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(mcn.Status.Conditions) != 9 || mcn.Status.ConfigVersion.Desired != "rendered-worker-2" {
		t.Errorf("status not stored: %+v", mcn.Status)
	}

	t.Run("ObservedGenerationMustNotDecrease", func(t *testing.T) {
		bad := mcn.DeepCopy()
		bad.Status.ObservedGeneration = 1
		if _, err := api.UpdateStatus(ctx, bad, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("lowering observedGeneration: %v, want Invalid", err)
		}
	})

	t.Run("EmptyCurrentConfig", func(t *testing.T) {
		// status.configVersion.current has no omitempty: a status with only desired set sends "".
		probe := mcn.DeepCopy()
		probe.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Desired: "rendered-worker-2"}
		// The CRD rejects it: the daemon must leave status.configVersion unset until it knows
		// the current config.
		_, err := api.UpdateStatus(ctx, probe, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("status.configVersion.current=\"\": %v, want Invalid", err)
		}
	})

	t.Run("PrinterColumns", func(t *testing.T) {
		out := kubectl(t, cp, "get", "machineconfignodes")
		wantHeader := "NAME UPDATED UPDATEPREPARED UPDATEEXECUTED UPDATEPOSTACTIONCOMPLETED UPDATECOMPLETED RESUMED AGE"
		wantRow := "worker-0 False True Unknown False False False"
		// Age, last as upstream shows it: a duration such as 5s or 2m1s.
		age := regexp.MustCompile(`^[0-9]+[smhd]([0-9]+[smh])?$`)
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 ||
			strings.Join(strings.Fields(lines[0]), " ") != wantHeader ||
			!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), wantRow+" ") ||
			!age.MatchString(lastField(lines[1])) {
			t.Errorf("kubectl get machineconfignodes:\n%s\nwant:\n%s\n%s <age>", out, wantHeader, wantRow)
		}
		wide := kubectl(t, cp, "get", "machineconfignodes", "-o", "wide")
		wantWide := wantHeader + " UPDATECOMPATIBLE UPDATEFILESANDOS DRAINEDNODE CORDONEDNODE REBOOTNODE RELOADEDCRIO UNCORDONED HEALTHCHECKED POOLNAME DESIREDCONFIG CURRENTCONFIG ETA"
		if header := strings.Join(strings.Fields(strings.SplitN(wide, "\n", 2)[0]), " "); header != wantWide {
			t.Errorf("kubectl get machineconfignodes -o wide header:\n%s\nwant:\n%s", header, wantWide)
		}
		t.Logf("kubectl get machineconfignodes -o wide:\n%s", wide)
	})

	t.Run("UpdateETAKept", func(t *testing.T) {
		// nodeconfd's own status field (hack/gencrds/own.go): kept, not pruned, and shown by -o wide.
		kubectl(t, cp, "patch", "machineconfignode", "worker-0", "--subresource=status", "--type=merge", "-p",
			`{"status":{"updateETA":{"postAction":"Reboot","started":"2026-12-06T09:00:00Z","estimatedFinish":"2026-12-06T09:02:00Z","basedOn":2}}}`)
		got := kubectl(t, cp, "get", "machineconfignode", "worker-0", "-o", "jsonpath={.status.updateETA}")
		if !strings.Contains(got, `"estimatedFinish":"2026-12-06T09:02:00Z"`) || !strings.Contains(got, `"basedOn":2`) {
			t.Errorf("status.updateETA stored as %q", got)
		}
		if wide := kubectl(t, cp, "get", "machineconfignodes", "-o", "wide"); !strings.Contains(wide, "2026-12-06T09:02:00Z") {
			t.Errorf("no ETA column:\n%s", wide)
		}
	})

	if err := api.Delete(ctx, mcn.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Get(ctx, mcn.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

func lastField(line string) string {
	f := strings.Fields(line)
	return f[len(f)-1]
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func newMCN(node string) *mcfgv1.MachineConfigNode {
	return &mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: mcfgv1.MachineConfigNodeSpec{
			Node:          mcfgv1.MCOObjectReference{Name: node},
			Pool:          mcfgv1.MCOObjectReference{Name: "worker"},
			ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: "rendered-worker-1"},
		},
	}
}
