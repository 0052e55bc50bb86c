package controller

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	opv1 "github.com/openshift/api/operator/v1"
	"go.uber.org/zap/zaptest"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// fakeMCs records the status patches; every other method is unused.
type fakeMCs struct {
	kubeapi.Resource[*opv1.MachineConfiguration, *opv1.MachineConfigurationList]
	patches []string
}

func (f *fakeMCs) Patch(_ context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions,
	sub ...string) (*opv1.MachineConfiguration, error) {
	if name != "cluster" || pt != types.MergePatchType || !reflect.DeepEqual(sub, []string{"status"}) {
		panic("unexpected patch of " + name)
	}
	f.patches = append(f.patches, string(data))
	return nil, nil
}

func policyObject(gen int64, files ...opv1.NodeDisruptionPolicySpecFile) *opv1.MachineConfiguration {
	mc := &opv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Generation: gen, ResourceVersion: "7"}}
	mc.Spec.NodeDisruptionPolicy.Files = files
	return mc
}

func noneFile(path string) opv1.NodeDisruptionPolicySpecFile {
	return opv1.NodeDisruptionPolicySpecFile{Path: path, Actions: []opv1.NodeDisruptionPolicySpecAction{{Type: opv1.NoneSpecAction}}}
}

// The status the controller wants: the merged policy, the generation and
// Degraded=False for a good spec; for a bad one, the last good policy kept
// and Degraded=True naming the object and field; lastTransitionTime moves
// only when Degraded's status does.
func TestMachineConfigurationStatus(t *testing.T) {
	t0, t1 := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0))
	good := policyObject(1, noneFile("/etc/good"))
	st, err := machineConfigurationStatus(good, t0)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := plan.PolicyFromAPI(good.Spec.NodeDisruptionPolicy, "x")
	if !reflect.DeepEqual(st.NodeDisruptionPolicyStatus.ClusterPolicies, plan.PolicyToStatus(want)) || st.ObservedGeneration != 1 {
		t.Errorf("good spec: status %+v", st)
	}
	c := meta.FindStatusCondition(st.Conditions, "Degraded")
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonPolicyMerged || c.ObservedGeneration != 1 || c.LastTransitionTime != t0 {
		t.Errorf("good spec: condition %+v", c)
	}

	bad := policyObject(2, noneFile("/etc/good"), noneFile("etc/relative"))
	bad.Status = st
	st2, err := machineConfigurationStatus(bad, t1)
	if err == nil {
		t.Fatal("bad spec: not refused")
	}
	if !reflect.DeepEqual(st2.NodeDisruptionPolicyStatus, st.NodeDisruptionPolicyStatus) || st2.ObservedGeneration != 2 {
		t.Errorf("bad spec: the last good policy is not kept: %+v", st2)
	}
	c = meta.FindStatusCondition(st2.Conditions, "Degraded")
	for _, s := range []string{"MachineConfiguration cluster", "spec.nodeDisruptionPolicy.files[1].path", "not absolute",
		"keeps the last good merged policy"} {
		if c == nil || !strings.Contains(c.Message, s) {
			t.Errorf("bad spec: condition %+v does not say %q", c, s)
		}
	}
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonPolicyRefused || c.LastTransitionTime != t1 || c.ObservedGeneration != 2 {
		t.Errorf("bad spec: condition %+v", c)
	}
	if len(st2.Conditions) != 1 {
		t.Errorf("conditions: %+v", st2.Conditions)
	}

	// Refused with nothing good before: the status stays empty and says so.
	st3, _ := machineConfigurationStatus(policyObject(1, noneFile("etc/relative")), t0)
	if len(st3.NodeDisruptionPolicyStatus.ClusterPolicies.Files) != 0 ||
		!strings.Contains(meta.FindStatusCondition(st3.Conditions, "Degraded").Message, "no good policy was merged yet") {
		t.Errorf("bad first spec: %+v", st3)
	}

	// The same good spec again, later: the same status (no transition).
	again := good.DeepCopy()
	again.Status = st
	st4, _ := machineConfigurationStatus(again, t1)
	if same, _ := sameJSON(st4, st); !same {
		t.Errorf("a second reconcile changes the status:\n%+v\n%+v", st4, st)
	}
}

// Reconcile writes through the status subresource once, then nothing while
// nothing changed (level-triggered, idempotent); a missing object, nothing.
func TestReconcileMachineConfiguration(t *testing.T) {
	f := &fakeMCs{}
	c := &Controller{Log: zaptest.NewLogger(t), Now: func() time.Time { return time.Unix(1000, 0) }, mcfgRes: f,
		mcfgs: cache.NewSharedIndexInformer(&cache.ListWatch{}, &opv1.MachineConfiguration{}, 0, cache.Indexers{})}
	ctx := context.Background()
	if _, err := c.ReconcileMachineConfiguration(ctx); err != nil || len(f.patches) != 0 {
		t.Fatalf("no object: %v, %d patches", err, len(f.patches))
	}
	mc := policyObject(3, noneFile("/etc/good"))
	if err := c.mcfgs.GetStore().Add(mc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReconcileMachineConfiguration(ctx); err != nil || len(f.patches) != 1 {
		t.Fatalf("first reconcile: %v, %d patches", err, len(f.patches))
	}
	var sent struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
		Status   opv1.MachineConfigurationStatus  `json:"status"`
	}
	if err := json.Unmarshal([]byte(f.patches[0]), &sent); err != nil {
		t.Fatal(err)
	}
	want, _ := machineConfigurationStatus(mc, metav1.NewTime(c.Now()))
	if same, _ := sameJSON(sent.Status, want); !same || sent.Metadata.ResourceVersion != "7" {
		t.Errorf("patch %s, want the status %+v at resourceVersion 7", f.patches[0], want)
	}
	// The API server's answer, as the watch shows it: no more writes.
	written := mc.DeepCopy()
	if err := json.Unmarshal(mustJSON(t, sent.Status), &written.Status); err != nil {
		t.Fatal(err)
	}
	if err := c.mcfgs.GetStore().Update(written); err != nil {
		t.Fatal(err)
	}
	c.Now = func() time.Time { return time.Unix(5000, 0) }
	if _, err := c.ReconcileMachineConfiguration(ctx); err != nil || len(f.patches) != 1 {
		t.Errorf("nothing changed: %v, %d patches", err, len(f.patches))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
