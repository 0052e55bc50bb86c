package controller

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	opv1 "github.com/openshift/api/operator/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/disruption"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// The controller, with its own token and admission policy, writes the
// node disruption policy of MachineConfiguration cluster to its status: a
// good policy merged over the defaults with the generation and
// Degraded=False, written once; a bad one (a path that is not absolute,
// which the CRD lets through) refused by Degraded=True naming the object
// and the field, the status keeping the last good merged policy, which the
// daemons' own read (disruption.Source) then applies.
func TestMachineConfigurationStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	api, err := kubeapi.NewAPI(bed.CP.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := kubeapi.MachineConfigurations(api)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := res.Delete(context.Background(), "cluster", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	controllers(ctx, t)

	restart := opv1.NodeDisruptionPolicySpecAction{Type: opv1.RestartSpecAction,
		Restart: &opv1.RestartService{ServiceName: "chronyd.service"}}
	none := opv1.NodeDisruptionPolicySpecAction{Type: opv1.NoneSpecAction}
	mc := &opv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	mc.Spec.ManagementState = "Managed"
	mc.Spec.NodeDisruptionPolicy.SSHKey.Actions = []opv1.NodeDisruptionPolicySpecAction{none}
	mc.Spec.NodeDisruptionPolicy.Files = []opv1.NodeDisruptionPolicySpecFile{
		{Path: "/etc/chrony.conf", Actions: []opv1.NodeDisruptionPolicySpecAction{restart}}}
	if mc, err = res.Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	merged, err := plan.PolicyFromAPI(mc.Spec.NodeDisruptionPolicy, disruption.Object)
	if err != nil {
		t.Fatal(err)
	}
	good := plan.PolicyToStatus(merged)
	got := waitStatus(ctx, t, res, "the good policy merged", func(mc *opv1.MachineConfiguration) bool {
		c := meta.FindStatusCondition(mc.Status.Conditions, "Degraded")
		return mc.Status.ObservedGeneration == mc.Generation && c != nil && c.Status == metav1.ConditionFalse &&
			reflect.DeepEqual(mc.Status.NodeDisruptionPolicyStatus.ClusterPolicies, good)
	})
	if r := got.Status.NodeDisruptionPolicyStatus.ClusterPolicies.Files[len(good.Files)-1]; r.Path != "/etc/chrony.conf" {
		t.Errorf("the spec's rule is not after the defaults: %+v", r)
	}
	// Level-triggered, idempotent: nothing more is written while nothing changes.
	time.Sleep(3 * time.Second)
	if again, err := res.Get(ctx, "cluster", metav1.GetOptions{}); err != nil || again.ResourceVersion != got.ResourceVersion {
		t.Errorf("the status was written again with nothing changed (%v)", err)
	}

	got.Spec.NodeDisruptionPolicy.Files = append(got.Spec.NodeDisruptionPolicy.Files,
		opv1.NodeDisruptionPolicySpecFile{Path: "etc/relative", Actions: []opv1.NodeDisruptionPolicySpecAction{none}})
	bad, err := res.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refused := waitStatus(ctx, t, res, "the bad policy refused", func(mc *opv1.MachineConfiguration) bool {
		c := meta.FindStatusCondition(mc.Status.Conditions, "Degraded")
		return mc.Status.ObservedGeneration == bad.Generation && c != nil && c.Status == metav1.ConditionTrue
	})
	c := meta.FindStatusCondition(refused.Status.Conditions, "Degraded")
	for _, s := range []string{"MachineConfiguration cluster", "spec.nodeDisruptionPolicy.files[1].path",
		`path "etc/relative" is not absolute`, "keeps the last good merged policy"} {
		if !strings.Contains(c.Message, s) {
			t.Errorf("Degraded's message %q does not say %q", c.Message, s)
		}
	}
	if c.Reason != "NodeDisruptionPolicyRefused" || c.ObservedGeneration != bad.Generation {
		t.Errorf("Degraded: %+v", c)
	}
	if !reflect.DeepEqual(refused.Status.NodeDisruptionPolicyStatus.ClusterPolicies, good) {
		t.Errorf("the status does not keep the last good merged policy: %+v", refused.Status.NodeDisruptionPolicyStatus)
	}

	// A daemon's read of the object (a fresh one, which never saw the good spec) applies it.
	s := &disruption.Source{Resource: res}
	s.Start(ctx)
	for {
		p, err := s.Policy()
		if r, ok := p.FileRuleFor("/etc/chrony.conf"); err == nil && ok && r.Actions[0].Unit == "chronyd.service" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("a daemon's read of the refused object: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitStatus polls MachineConfiguration cluster until ok.
func waitStatus(ctx context.Context, t *testing.T, res kubeapi.Resource[*opv1.MachineConfiguration, *opv1.MachineConfigurationList],
	what string, ok func(*opv1.MachineConfiguration) bool) *opv1.MachineConfiguration {
	t.Helper()
	for {
		mc, err := res.Get(ctx, "cluster", metav1.GetOptions{})
		if err == nil && ok(mc) {
			return mc
		}
		select {
		case <-ctx.Done():
			if mc != nil {
				t.Fatalf("%s: status %+v (%v)", what, mc.Status, err)
			}
			t.Fatalf("%s: %v", what, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
