package policy

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// The controller's token, bound to its pod, writes the Leases and Events it needs and no other
// (the policy nodeconfd-controller-records): its own Lease; the delete of the old disruption
// budget's Leases and the surge slots, never another Lease; the answer to a surge slot, never its
// node, holder or pod; Events on pools only, a repeat raising
// only the count and time. RBAC alone let it create, delete and patch any of them in its
// namespaces.
func TestControllerLeasesAndEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	b := start(ctx, t)
	ctlPod, err := b.admin.CoreV1().Pods(namespace).Create(ctx, pod("nodeconfd-controller-x", nodeB, "nodeconfd-controller"),
		metav1.CreateOptions{})
	check(t, err)
	cfg, err := b.cp.RestConfigForPod(ctx, ctlPod)
	check(t, err)
	k := kubernetes.NewForConfigOrDie(cfg)
	leases, adminLeases := k.CoordinationV1().Leases(namespace), b.admin.CoordinationV1().Leases(namespace)
	events, adminEvents := k.CoreV1().Events("default"), b.admin.CoreV1().Events("default")
	const denied = "nodeconfd-controller-records: refused"

	// The old budget's Leases, a surge slot and another Lease, made by an administrator.
	lease := func(name string, labels map[string]string) {
		t.Helper()
		_, err := adminLeases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{"nodeconfd.io/surge-pod": "shop/web-0"}}}, metav1.CreateOptions{})
		check(t, err)
	}
	budget := map[string]string{"nodeconfd.io/disruption-budget": "nodeconfd-budget"}
	waiter := map[string]string{"nodeconfd.io/disruption-budget": "nodeconfd-budget", "nodeconfd.io/disruption-role": "waiter"}
	lease("nodeconfd-budget-0", budget)
	lease("nodeconfd-budget-q-0123456789abcdef", waiter)
	lease("nodeconfd-budget-other", budget)
	lease("nodeconfd-surge-0", map[string]string{"nodeconfd.io/surge-node": nodeA})
	lease("someone-else", budget)
	podEvent, err := adminEvents.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web-a.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-a"}, Reason: "Started",
		Message: "x"}, metav1.CreateOptions{})
	check(t, err)

	eventually(ctx, t, "policy in force", func() error {
		_, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
		return wantDeniedBy(err, denied, "")
	})

	t.Run("Allowed", func(t *testing.T) {
		own, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "nodeconfd-controller"}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating its own Lease: %v", err)
		}
		holder := "nodeconfd-controller-x"
		own.Spec.HolderIdentity = &holder
		if _, err := leases.Update(ctx, own, metav1.UpdateOptions{}); err != nil {
			t.Errorf("renewing its own Lease: %v", err)
		}
		for _, name := range []string{"nodeconfd-budget-0", "nodeconfd-budget-q-0123456789abcdef"} {
			if err := leases.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("deleting the old budget's Lease %s: %v", name, err)
			}
		}
		if err := updateSlot(ctx, adminLeases, leases, func(l *coordinationv1.Lease) {
			l.Annotations["nodeconfd.io/surge-answer"] = "raised"
		}); err != nil {
			t.Errorf("answering a surge slot: %v", err)
		}
		ev, err := events.Create(ctx, poolEvent("worker", "RenderedConfig", "Rendered x"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("an Event on pool worker: %v", err)
		}
		if _, err := events.Patch(ctx, ev.Name, types.MergePatchType, []byte(`{"count":2,"lastTimestamp":"2026-01-01T00:00:00Z"}`),
			metav1.PatchOptions{}); err != nil {
			t.Errorf("counting a repeat of its pool Event: %v", err)
		}
	})

	poolEv, err := adminEvents.Create(ctx, poolEvent("worker", "RenderedConfig", "by admin"), metav1.CreateOptions{})
	check(t, err)
	for _, c := range []struct {
		name, want string
		do         func() error
	}{
		{"LeaseOfAnotherName", "only its own Lease", func() error {
			_, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "nodeconfd-surge-1"}},
				metav1.CreateOptions{})
			return err
		}},
		{"SurgeSlotOfAnotherPod", "without changing their node, holder or pod", func() error {
			return updateSlot(ctx, adminLeases, leases, func(l *coordinationv1.Lease) { l.Annotations["nodeconfd.io/surge-pod"] = "shop/db-0" })
		}},
		{"SurgeSlotOfAnotherNode", "without changing their node, holder or pod", func() error {
			return updateSlot(ctx, adminLeases, leases, func(l *coordinationv1.Lease) { l.Labels["nodeconfd.io/surge-node"] = nodeB })
		}},
		{"DeleteBudgetLabelledOtherName", "only the Leases of the old disruption budget", func() error {
			return leases.Delete(ctx, "nodeconfd-budget-other", metav1.DeleteOptions{})
		}},
		{"DeleteLabelledNotOfItsBudget", "only the Leases of the old disruption budget", func() error {
			return leases.Delete(ctx, "someone-else", metav1.DeleteOptions{})
		}},
		{"EventOnAPod", "Events only on MachineConfigPools", func() error {
			ev := poolEvent("worker", "Killing", "spoofed")
			ev.InvolvedObject = corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-a"}
			_, err := events.Create(ctx, ev, metav1.CreateOptions{})
			return err
		}},
		{"EventOnANode", "Events only on MachineConfigPools", func() error {
			ev := poolEvent("worker", "Rebooted", "spoofed")
			ev.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: nodeA, UID: nodeA}
			_, err := events.Create(ctx, ev, metav1.CreateOptions{})
			return err
		}},
		{"RewriteAPoolEvent", "a repeat raises only the count and time", func() error {
			_, err := events.Patch(ctx, poolEv.Name, types.MergePatchType, []byte(`{"message":"rewritten"}`), metav1.PatchOptions{})
			return err
		}},
		{"RewriteAPodEvent", "Events only on MachineConfigPools", func() error {
			_, err := events.Patch(ctx, podEvent.Name, types.MergePatchType, []byte(`{"count":5}`), metav1.PatchOptions{})
			return err
		}},
	} {
		t.Run("Denied/"+c.name, func(t *testing.T) {
			if err := wantDeniedBy(c.do(), denied, c.want); err != nil {
				t.Error(err)
			}
		})
	}
	for _, name := range []string{"nodeconfd-budget-other", "someone-else"} {
		if _, err := adminLeases.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Lease %s after the refused delete: %v", name, err)
		}
	}
	// A surge slot whose node stopped draining with its surge held (surge.Granter).
	if err := leases.Delete(ctx, "nodeconfd-surge-0", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting a surge slot: %v", err)
	}
}

// updateSlot updates the surge slot nodeconfd-surge-0 as edit says, with
// the controller's token, as it answers one (an update: it may not patch
// Leases).
func updateSlot(ctx context.Context, admin, leases typedcoordinationv1.LeaseInterface, edit func(*coordinationv1.Lease)) error {
	l, err := admin.Get(ctx, "nodeconfd-surge-0", metav1.GetOptions{}) // it reads the slots from its watch
	if err != nil {
		return err
	}
	edit(l)
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// poolEvent is an Event on pool as the controller records it.
func poolEvent(pool, reason, message string) *corev1.Event {
	now := metav1.Now()
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: pool + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfigPool",
			Name: pool, UID: "00000000-0000-0000-0000-000000000002"},
		Reason: reason, Message: message, Type: corev1.EventTypeNormal, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "nodeconfd"}}
}
