package surge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotation opts a Deployment or StatefulSet, or every one of a
// namespace, into the drain's surge: "true" on the workload or its
// namespace; "false" on the workload opts it out of its namespace's choice.
const Annotation = "nodeconfd.io/drain-surge"

// FieldManager is the field manager of the surge's replica changes:
// managedFields tell its changes apart from another owner's.
const FieldManager = "nodeconfd-surge"

// quietFor is how recently another owner of spec.replicas may have
// changed it before a surge would fight it (an operator or autoscaler the
// daemon does not know by kind).
const quietFor = 10 * time.Minute

// Workload is the owner of a pod that a surge scales: a Deployment or a
// StatefulSet (their replicas patched), or any other kind with a scale
// subresource (Resource set: its scale patched).
type Workload struct {
	APIVersion, Resource  string
	Kind, Namespace, Name string
	UID                   types.UID
	Replicas              int32
	Annotations           map[string]string
	ManagedFields         []metav1.ManagedFieldsEntry
	// Parallel is a StatefulSet's podManagementPolicy: Parallel.
	Parallel bool
}

func (w Workload) String() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

func (w Workload) Ref() corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: w.APIVersion, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, UID: w.UID}
}

func (w Workload) Target() kubeapi.ScaleTarget {
	return kubeapi.ScaleTarget{APIVersion: w.APIVersion, Resource: w.Resource, Namespace: w.Namespace, Name: w.Name}
}

// scaled says whether the surge goes through the scale subresource (any
// kind but a Deployment or a StatefulSet).
func (w Workload) Scaled() bool { return w.Resource != "" }

// optedIn says whether a workload takes part in surges: its own annotation
// decides when it has one, else its namespace's.
func optedIn(workloadAnn, namespaceAnn map[string]string) bool {
	if v, ok := workloadAnn[Annotation]; ok {
		return v == "true"
	}
	return namespaceAnn[Annotation] == "true"
}

// refusal says why a workload opted in must not be surged, or "" when
// it may: a surge must never fight another owner of the replica count, nor
// scale a StatefulSet that would start the new pod only after the others
// in order.
func refusal(w Workload, hpas []autoscalingv2.HorizontalPodAutoscaler, now time.Time) string {
	if w.Kind == "StatefulSet" && !w.Parallel {
		return "StatefulSet " + w.Name + " has podManagementPolicy OrderedReady, not Parallel"
	}
	if w.Replicas < 1 {
		return w.String() + " has no replicas to add to"
	}
	for _, h := range hpas {
		t := h.Spec.ScaleTargetRef
		if t.Kind == w.Kind && t.Name == w.Name && (t.APIVersion == w.APIVersion || t.APIVersion == "") {
			return "HorizontalPodAutoscaler " + h.Name + " scales " + w.String()
		}
	}
	for _, m := range w.ManagedFields {
		if why := fights(w, m, now); why != "" {
			return why
		}
	}
	return ""
}

// fights says how another owner of spec.replicas would fight a surge, or
// "": a server-side apply owner (a GitOps controller) re-applies its count
// at any time; an owner through the scale subresource (an autoscaler,
// kubectl scale) within quietFor may be acting now, and such an entry's
// time is when it last set the replicas. An owner by a plain update (the
// workload's creator, an operator) cannot be told apart: its entry's time
// is that of any of its fields. Should it set the replicas back during a
// surge, the surge only stops helping (the budget still holds), and its
// end says so.
func fights(w Workload, m metav1.ManagedFieldsEntry, now time.Time) string {
	if m.Manager == FieldManager || !ownsReplicas(m) {
		return ""
	}
	who := strconv.Quote(m.Manager)
	if m.Operation == metav1.ManagedFieldsOperationApply {
		return who + " sets the replicas of " + w.String() + " by server-side apply"
	}
	if m.Subresource != "scale" || m.Time == nil || now.Sub(m.Time.Time) > quietFor {
		return ""
	}
	return fmt.Sprintf("%s scaled %s %s ago", who, w.String(), now.Sub(m.Time.Time).Round(time.Second))
}

// ownsReplicas says whether a managedFields entry holds spec.replicas.
func ownsReplicas(m metav1.ManagedFieldsEntry) bool {
	if m.FieldsV1 == nil {
		return false
	}
	var top, spec map[string]json.RawMessage
	if json.Unmarshal(m.FieldsV1.Raw, &top) != nil || json.Unmarshal(top["f:spec"], &spec) != nil {
		return false
	}
	_, ok := spec["f:replicas"]
	return ok
}
