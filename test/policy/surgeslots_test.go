package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/cluster/surge"
)

// outOfSet is the refusal of a slot Lease named out of nodeconfd-surge-0 … 99.
const outOfSet = "the surge slots are the Leases nodeconfd-surge-0 to nodeconfd-surge-99"

// surgeSlotsBounded: the daemon of node A may take the slot Leases nodeconfd-surge-0 …
// nodeconfd-surge-<surge.MaxSlots-1>, as daemon/drain writes them (at the largest its
// annotations can be), and no other name: a loop of creates past the set is refused at every
// name, so one node cannot fill etcd with Leases. A Lease of the set that holds more than a
// slot does (a huge annotation, another label, a spec field, a finalizer) is refused naming it.
func surgeSlotsBounded(ctx context.Context, t *testing.T, k kubernetes.Interface) {
	leases := k.CoordinationV1().Leases(namespace)
	top := fmt.Sprintf("nodeconfd-surge-%d", surge.MaxSlots-1)
	if _, err := leases.Create(ctx, daemonSlot(top, nodeA), metav1.CreateOptions{}); err != nil {
		t.Errorf("taking the last slot %s, as the daemon writes it: %v", top, err)
	} else if err := leases.Delete(ctx, top, metav1.DeleteOptions{}); err != nil {
		t.Errorf("freeing it: %v", err)
	}
	var names []string
	for i := surge.MaxSlots; i < surge.MaxSlots+20; i++ {
		names = append(names, fmt.Sprintf("nodeconfd-surge-%d", i))
	}
	names = append(names, "nodeconfd-surge-999", "nodeconfd-surge-0x", "nodeconfd-surge-00", "nodeconfd-surge-01",
		"nodeconfd-surge--1", "nodeconfd-surge-"+strings.Repeat("9", 200))
	for _, name := range names {
		_, err := leases.Create(ctx, daemonSlot(name, nodeA), metav1.CreateOptions{})
		if err := wantSurgeDenied(err, outOfSet); err != nil {
			t.Errorf("creating Lease %s: %v", name, err)
		}
	}
	for i, c := range oversizedSlots() {
		t.Run("Denied/"+c.name, func(t *testing.T) {
			// A slot of its own: a case the policy let through leaves the others' free.
			l := daemonSlot(fmt.Sprintf("nodeconfd-surge-%d", 10+i), nodeA)
			c.change(l)
			_, err := leases.Create(ctx, l, metav1.CreateOptions{})
			if err := wantSurgeDenied(err, "a surge slot the daemon writes holds only spec.holderIdentity"); err != nil {
				t.Error(err)
			}
			if err := wantSurgeDenied(err, "not "+c.field); err != nil {
				t.Error(err)
			}
		})
	}
}

// oversizedSlot is a slot Lease with one thing more than daemon/drain writes, and the field the
// refusal names.
type oversizedSlot struct {
	name, field string
	change      func(*coordinationv1.Lease)
}

func oversizedSlots() []oversizedSlot {
	seconds := int32(15)
	return []oversizedSlot{
		{"HugeAnnotation", "metadata.annotations[example.com/filler]", func(l *coordinationv1.Lease) {
			l.Annotations["example.com/filler"] = strings.Repeat("x", 200<<10)
		}},
		{"LongPod", "metadata.annotations[nodeconfd.io/surge-pod]", func(l *coordinationv1.Lease) {
			l.Annotations["nodeconfd.io/surge-pod"] = "default/" + strings.Repeat("p", 500)
		}},
		{"Label", "metadata.labels[example.com/extra]", func(l *coordinationv1.Lease) { l.Labels["example.com/extra"] = "x" }},
		{"SpecField", "spec.leaseDurationSeconds", func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = &seconds }},
		{"Finalizer", "metadata.finalizers", func(l *coordinationv1.Lease) { l.Finalizers = []string{"example.com/keep"} }},
	}
}

// daemonSlot is a slot Lease as daemon/drain's takeSlot writes it, its one annotation as long
// as the daemon can make it: a namespace of 63 bytes and a pod name of 253.
func daemonSlot(name, node string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels: map[string]string{"nodeconfd.io/surge-node": node},
			Annotations: map[string]string{
				"nodeconfd.io/surge-pod": strings.Repeat("n", 63) + "/" + strings.Repeat("p", 253),
			}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &node},
	}
}
