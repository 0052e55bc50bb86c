package disruption_test

import (
	"context"
	"errors"
	"testing"
	"time"

	opv1 "github.com/openshift/api/operator/v1"
	"go.uber.org/zap/zaptest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/disruption"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// fakeMCs lists one object and then sends what the test pushes.
type fakeMCs struct {
	kubeapi.Resource[*opv1.MachineConfiguration, *opv1.MachineConfigurationList]
	first *opv1.MachineConfiguration
	w     *watch.FakeWatcher
}

func (f *fakeMCs) List(context.Context, metav1.ListOptions) (*opv1.MachineConfigurationList, error) {
	return &opv1.MachineConfigurationList{ListMeta: metav1.ListMeta{ResourceVersion: f.first.ResourceVersion},
		Items: []opv1.MachineConfiguration{*f.first}}, nil
}

func (f *fakeMCs) Watch(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		return nil, errors.New("no watch list here") // the reflector lists instead
	}
	return f.w, nil
}

func file(path string, t opv1.NodeDisruptionPolicySpecActionType) opv1.NodeDisruptionPolicySpecFile {
	return opv1.NodeDisruptionPolicySpecFile{Path: path, Actions: []opv1.NodeDisruptionPolicySpecAction{{Type: t}}}
}

// statusOf is what the controller writes for spec at generation gen.
func statusOf(t *testing.T, spec opv1.NodeDisruptionPolicyConfig, gen int64) opv1.MachineConfigurationStatus {
	p, err := plan.PolicyFromAPI(spec, disruption.Object)
	if err != nil {
		t.Fatal(err)
	}
	return opv1.MachineConfigurationStatus{ObservedGeneration: gen,
		NodeDisruptionPolicyStatus: opv1.NodeDisruptionPolicyStatus{ClusterPolicies: plan.PolicyToStatus(p)}}
}

// The daemon reads the controller's merged policy from the status while
// status.observedGeneration is metadata.generation, and merges the spec
// itself otherwise: no controller (no status), a controller behind the
// spec, an empty status (the controller refused the first spec).
func TestSourceReadsStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mc := &opv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster", ResourceVersion: "1", Generation: 1}}
	mc.Spec.NodeDisruptionPolicy.Files = []opv1.NodeDisruptionPolicySpecFile{file("/etc/spec", opv1.NoneSpecAction)}
	f := &fakeMCs{first: mc, w: watch.NewFake()}
	s := &disruption.Source{Resource: f, Log: zaptest.NewLogger(t)}
	s.Start(ctx)
	want := func(step, path string, typ plan.ActionType, source string) {
		t.Helper()
		for {
			p, err := s.Policy()
			r, ok := p.FileRuleFor(path + "/x")
			if err == nil && ok && r.Path == path && r.Actions[0].Type == typ && r.Source == source {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: the rule of %s is %+v (%v), want %s from %s", step, path, r, err, typ, source)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	want("no controller", "/etc/spec", plan.ActNone, "spec.nodeDisruptionPolicy.files[0]")

	// The controller has seen generation 1; its status (here, one that
	// differs from the spec, to tell them apart) is what the daemon applies.
	next := func(gen int64, rv string, spec opv1.NodeDisruptionPolicyConfig, st opv1.MachineConfigurationStatus) {
		mc = mc.DeepCopy()
		mc.Generation, mc.ResourceVersion, mc.Spec.NodeDisruptionPolicy, mc.Status = gen, rv, spec, st
		f.w.Modify(mc)
	}
	spec1 := mc.Spec.NodeDisruptionPolicy
	other := opv1.NodeDisruptionPolicyConfig{Files: []opv1.NodeDisruptionPolicySpecFile{file("/etc/status", opv1.DrainSpecAction)}}
	next(1, "2", spec1, statusOf(t, other, 1))
	want("status at the spec's generation", "/etc/status", plan.ActDrain, plan.StatusField+".files[14]")
	if p, _ := s.Policy(); func() bool { _, ok := p.FileRuleFor("/etc/spec/x"); return ok }() {
		t.Error("status at the spec's generation: the spec's own rule is in force too")
	}

	// A new spec the controller has not seen: the daemon merges it.
	spec2 := opv1.NodeDisruptionPolicyConfig{Files: []opv1.NodeDisruptionPolicySpecFile{file("/etc/spec2", opv1.RebootSpecAction)}}
	next(2, "3", spec2, statusOf(t, other, 1))
	want("status behind the spec", "/etc/spec2", plan.ActReboot, "spec.nodeDisruptionPolicy.files[0]")

	// The controller caught up: the status, sources named from the spec.
	next(2, "4", spec2, statusOf(t, spec2, 2))
	want("status caught up", "/etc/spec2", plan.ActReboot, "spec.nodeDisruptionPolicy.files[0]")

	// A bad spec the controller refused, keeping the last good policy at
	// the new generation: the daemon applies it (a daemon that never saw
	// a good one too).
	bad := opv1.NodeDisruptionPolicyConfig{Files: []opv1.NodeDisruptionPolicySpecFile{file("etc/relative", opv1.NoneSpecAction)}}
	kept := statusOf(t, spec2, 2)
	kept.ObservedGeneration = 3
	next(3, "5", bad, kept)
	want("refused spec, last good status", "/etc/spec2", plan.ActReboot, plan.StatusField+".files[14]")

	// An empty status at the spec's generation (the controller refused the
	// first spec it saw): the spec is merged here, and refused.
	next(4, "6", bad, opv1.MachineConfigurationStatus{ObservedGeneration: 4})
	time.Sleep(200 * time.Millisecond)
	fresh := &disruption.Source{Resource: &fakeMCs{first: mc, w: watch.NewFake()}, Log: zaptest.NewLogger(t)}
	fresh.Start(ctx)
	if _, err := fresh.Policy(); err == nil {
		t.Error("an empty status and a bad spec: not refused")
	}
}
