package controller

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
)

// drainableFirst (returning the config it rolls out): the first node in the rollout's order runs a pod a PodDisruptionBudget at zero
// protects, so its drain could not finish: the controller hands the new config to the two
// others first (its forecast), then to it last, where it waits uncordoned for the budget; once
// the budget is gone it updates too.
func drainableFirst(ctx context.Context, t *testing.T, s *sampler, before string) string {
	t.Helper()
	const node = "w-a1"
	labels := map[string]string{"app": "held"}
	rs, err := bed.Kube.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "held"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/held"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	if _, err := bed.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "held-a", Labels: labels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.com/held"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := intstr.FromInt32(0)
	if _, err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "held"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		b, err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "held", metav1.GetOptions{})
		return err == nil && b.Status.ObservedGeneration == b.Generation && b.Status.ExpectedPods == 1, nil
	}); err != nil {
		t.Fatalf("budget held never counted its pod: %v", err)
	}

	apply(ctx, t, fragment("50-worker-one", map[string]string{"one": "forecast"}))
	p := waitPool(ctx, t, "a config rendered", func(p *mcfgv1.MachineConfigPool) bool {
		return p.Spec.Configuration.Name != before
	})
	target := p.Spec.Configuration.Name
	waitTold(ctx, t, s, target, 3)
	if got := s.order(target); !reflect.DeepEqual(got, []string{"w-a2", "w-b1", node}) {
		t.Errorf("rollout order %v, want %s last: its drain could not finish", got, node)
	}
	waitNode(ctx, t, node, "waits uncordoned", func(n *corev1.Node) bool {
		return !n.Spec.Unschedulable && n.Annotations["machineconfiguration.openshift.io/desiredConfig"] == target
	})
	var last *metav1.Condition
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		mcn, err := bed.MCfg.MachineconfigurationV1().MachineConfigNodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = mcnCondition(mcn, "Cordoned")
		return last != nil && last.Reason == "Waiting" && strings.Contains(last.Message, "PodDisruptionBudget held allows 0"), nil
	}); err != nil {
		t.Errorf("node %s never said it waits for budget held before its cordon; Cordoned %+v", node, last)
	}
	if err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPool(ctx, t, "rollout after the budget went", updatedTo(before))
	return target
}
