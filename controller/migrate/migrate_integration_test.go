package migrate_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/controller/migrate"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

const namespace = "nodeconfd"

// oldLease is a Lease as the daemons of the Lease budget wrote it: held by
// a node, for 30 minutes, renewed now.
func oldLease(ns, name, holder string, labels, annotations map[string]string) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(1800)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds,
			AcquireTime: &now, RenewTime: &now},
	}
}

// queueName is the name the old daemons gave a node's queue entry.
func queueName(budget, node string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(node))
	return fmt.Sprintf("%s-q-%016x", budget, h.Sum64())
}

// On a real kube-apiserver: the slots (one kept for its soak time) and the
// queue entries of two budgets are deleted; the leader election's Lease,
// a Lease that only looks like a slot, a labelled Lease of another name
// and the budget's Leases of another namespace stay. A second run deletes
// nothing.
func TestDeleteLeaseBudgetOnAPIServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (the test bed's control plane)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir(), Log: controlplane.TestLog{T: t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	k := kubernetes.NewForConfigOrDie(cp.RestConfig())
	for _, ns := range []string{namespace, "other"} {
		if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	budget := func(name string) map[string]string { return map[string]string{migrate.BudgetLabel: name} }
	entry := func(name string) map[string]string {
		return map[string]string{migrate.BudgetLabel: name, migrate.RoleLabel: migrate.RoleWaiter,
			"nodeconfd.io/queued-at": strconv.FormatInt(time.Now().UnixMilli(), 10)}
	}
	soaking := map[string]string{"nodeconfd.io/soak-until": time.Now().Add(time.Hour).Format(time.RFC3339)}
	old := []*coordinationv1.Lease{
		oldLease(namespace, "nodeconfd-disruption-0", "worker-0", budget("nodeconfd-disruption"), nil),
		oldLease(namespace, "nodeconfd-disruption-1", "worker-1", budget("nodeconfd-disruption"), soaking),
		oldLease(namespace, queueName("nodeconfd-disruption", "worker-2"), "worker-2", entry("nodeconfd-disruption"), nil),
		oldLease(namespace, queueName("nodeconfd-disruption", "worker-3"), "worker-3", entry("nodeconfd-disruption"), nil),
		oldLease(namespace, "infra-budget-0", "infra-0", budget("infra-budget"), nil),
	}
	kept := []*coordinationv1.Lease{
		oldLease(namespace, "nodeconfd-controller", "nodeconfd-controller-7d9f_3c1e", nil, nil),
		oldLease(namespace, "nodeconfd-disruption-2", "worker-4", nil, nil),
		oldLease(namespace, "nodeconfd-disruption-notes", "someone", budget("nodeconfd-disruption"), nil),
		oldLease("other", "nodeconfd-disruption-0", "worker-5", budget("nodeconfd-disruption"), nil),
	}
	for _, l := range append(slices.Clone(old), kept...) {
		if _, err := k.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	deleted, err := migrate.DeleteLeaseBudget(ctx, k.CoordinationV1().Leases(namespace), namespace, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range old {
		want = append(want, l.Name)
	}
	slices.Sort(want)
	slices.Sort(deleted)
	if !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	left := map[string]bool{}
	for _, ns := range []string{namespace, "other"} {
		list, err := k.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list.Items {
			left[ns+"/"+l.Name] = true
		}
	}
	for _, l := range old {
		if left[l.Namespace+"/"+l.Name] {
			t.Errorf("Lease %s/%s of the old budget is still there", l.Namespace, l.Name)
		}
	}
	for _, l := range kept {
		if !left[l.Namespace+"/"+l.Name] {
			t.Errorf("Lease %s/%s was deleted, want it kept", l.Namespace, l.Name)
		}
	}
	if again, err := migrate.DeleteLeaseBudget(ctx, k.CoordinationV1().Leases(namespace), namespace, nil); err != nil || len(again) != 0 {
		t.Errorf("second run: deleted %v, %v; want nothing", again, err)
	}
}
