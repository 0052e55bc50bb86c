package drain

import (
	"errors"

	"github.com/nodeconfd/nodeconfd/cluster/surge"
	corev1 "k8s.io/api/core/v1"
)

// Surge settings of a Drainer. A pod whose eviction a PodDisruptionBudget
// refuses, and whose Deployment or StatefulSet opted in (surge.Annotation),
// gets one more replica first: once the new pod is Ready elsewhere, the
// budget allows the eviction, and the replicas go back as soon as it is
// accepted. A budget is never broken; the surge only adds capacity.
//
// The daemon never changes a workload itself: it asks nodeconfd
// controller (Granter) through one of Max slot Leases (nodeconfd-surge-0
// …) in Namespace, naming only the refused pod. The controller checks that
// the node drains and that the pod runs there, records the owner's replica
// count in the Lease, raises it by one and answers; the daemon's delete of
// the Lease asks for the count back, which the controller puts before it
// lets the Lease go (a finalizer). A stolen daemon token can thus move only
// the owner of a pod on its own node, only while that node is cordoned,
// only between the recorded count and one more.
type SurgeOptions struct {
	// Max is how many workloads may be surged at once in the cluster; 0
	// turns surges off.
	Max int
	// Namespace holds the slot Leases: the daemon's own.
	Namespace string
	// Event records an Event on the workload surged.
	Event func(ref corev1.ObjectReference, warning bool, reason, message string)
	// Count counts a surge's step in the metrics: raised, lowered,
	// refused, failed.
	Count func(result string)
}

// errSurgeCap is a surge refused for now: every slot is taken.
var errSurgeCap = errors.New("every surge slot is taken")

func (d *Drainer) surgeEvent(w surge.Workload, warning bool, reason, msg string) {
	if d.Surge.Event != nil {
		d.Surge.Event(w.Ref(), warning, reason, msg)
	}
}

func (d *Drainer) surgeCount(result string) {
	if d.Surge.Count != nil {
		d.Surge.Count(result)
	}
}
