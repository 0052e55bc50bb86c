package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Surge settings of a Drainer. A pod whose eviction a PodDisruptionBudget
// refuses, and whose Deployment or StatefulSet opted in (SurgeAnnotation),
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

// MaxSurgeSlots bounds SurgeOptions.Max (--drain-surge-max): the
// admission policy nodeconfd-surge (manifests/04-admission-policy.yaml)
// lets a daemon write only the slot Leases nodeconfd-surge-0 …
// nodeconfd-surge-99, so that a stolen daemon token cannot fill etcd with
// Leases. Raise it only with the policy's name pattern.
const MaxSurgeSlots = 100

// A slot Lease: the daemon writes the label, the holder and the pod (and
// nothing else: the policy nodeconfd-surge bounds it to that); the
// controller writes the record and the answer.
const (
	surgeLeasePrefix = "nodeconfd-surge-"
	surgeNodeLabel   = "nodeconfd.io/surge-node"
	surgePodAnn      = "nodeconfd.io/surge-pod"      // namespace/name, the daemon's request
	surgeWorkloadAnn = "nodeconfd.io/surge-workload" // Kind/namespace/name
	surgeUIDAnn      = "nodeconfd.io/surge-uid"
	surgeFromAnn     = "nodeconfd.io/surge-from"
	surgeToAnn       = "nodeconfd.io/surge-to"
	// surgeAPIAnn is "<apiVersion> <resource>" of a workload reached
	// through its scale subresource.
	surgeAPIAnn = "nodeconfd.io/surge-api"
	// surgeRaisedAnn is the controller's answer once the replicas are
	// raised; surgeRefusedAnn its refusal, with why.
	surgeRaisedAnn  = "nodeconfd.io/surge-raised"
	surgeRefusedAnn = "nodeconfd.io/surge-refused"
	// SurgeFinalizer holds a granted slot Lease until the controller has
	// put the replicas back.
	SurgeFinalizer = "nodeconfd.io/surge"
)

// surgeRecord is one surge: the workload and its replicas before and during
// it, and the slot Lease that records it.
type surgeRecord struct {
	Lease    string
	Workload workload
	From, To int32
}

func (s surgeRecord) String() string {
	return fmt.Sprintf("%s (%d → %d → %d replicas)", s.Workload, s.From, s.To, s.From)
}

// errSurgeCap is a surge refused for now: every slot is taken.
var errSurgeCap = errors.New("every surge slot is taken")

// workloadOf finds the Deployment or StatefulSet that owns the pod; ok is
// false (with why) when no such owner would scale it.
func (d *Drainer) workloadOf(ctx context.Context, pod *corev1.Pod) (w workload, why string, err error) {
	c := metav1.GetControllerOf(pod)
	switch {
	case c == nil:
		return w, "pod " + podName(pod) + " has no controller", nil
	case len(validation.IsDNS1123Subdomain(c.Name)) > 0:
		// The API server checks an owner reference's name only for being
		// there: a tenant's may hold anything, and is never read nor
		// quoted raw.
		return w, fmt.Sprintf("pod %s's controller is named %q, not an object name", podName(pod), cutName(c.Name)), nil
	case c.Kind == "StatefulSet" && strings.HasPrefix(c.APIVersion, "apps/"):
		s, err := d.Client.StatefulSets(pod.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return w, "", fmt.Errorf("reading StatefulSet %s/%s: %w", pod.Namespace, c.Name, err)
		}
		return workload{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name, UID: s.UID, Replicas: replicas(s.Spec.Replicas),
			Annotations: s.Annotations, ManagedFields: s.ManagedFields,
			Parallel: s.Spec.PodManagementPolicy == appsv1.ParallelPodManagement}, "", nil
	case c.Kind == "ReplicaSet" && strings.HasPrefix(c.APIVersion, "apps/"):
		rs, err := d.Client.ReplicaSets(pod.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return w, "", fmt.Errorf("reading ReplicaSet %s/%s: %w", pod.Namespace, c.Name, err)
		}
		dc := metav1.GetControllerOf(rs)
		if dc != nil && len(validation.IsDNS1123Subdomain(dc.Name)) > 0 {
			return w, fmt.Sprintf("ReplicaSet %s/%s's controller is named %q, not an object name", rs.Namespace, rs.Name, cutName(dc.Name)), nil
		}
		if dc == nil || dc.Kind != "Deployment" {
			return d.scaledWorkload(ctx, pod.Namespace, c) // a ReplicaSet of its own
		}
		dep, err := d.Client.Deployments(pod.Namespace).Get(ctx, dc.Name, metav1.GetOptions{})
		if err != nil {
			return w, "", fmt.Errorf("reading Deployment %s/%s: %w", pod.Namespace, dc.Name, err)
		}
		return workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: dep.Namespace, Name: dep.Name, UID: dep.UID,
			Replicas: replicas(dep.Spec.Replicas), Annotations: dep.Annotations, ManagedFields: dep.ManagedFields}, "", nil
	}
	return d.scaledWorkload(ctx, pod.Namespace, c)
}

// scaledWorkload is an owner of another kind, reached through its scale
// subresource when it has one. Its annotations and managed fields are not
// read (that would take a read of every kind in the cluster): it opts in
// through its namespace, and only an autoscaler keeps it from a surge.
func (d *Drainer) scaledWorkload(ctx context.Context, ns string, c *metav1.OwnerReference) (w workload, why string, err error) {
	resource, scalable, err := d.Client.ResourceOf(ctx, c.APIVersion, c.Kind)
	if err != nil {
		return w, "", err
	}
	if !scalable {
		return w, c.Kind + " " + c.Name + " has no scale subresource", nil
	}
	w = workload{APIVersion: c.APIVersion, Resource: resource, Kind: c.Kind, Namespace: ns, Name: c.Name, UID: c.UID}
	sc, err := d.Client.GetScale(ctx, w.target())
	if err != nil {
		return w, "", fmt.Errorf("reading the scale of %s: %w", w, err)
	}
	w.Replicas = sc.Spec.Replicas
	return w, "", nil
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// surgeable reads what decides a surge of the pod's owner: quiet is true
// when the owner did not opt in (nothing to say), why is set when it opted
// in but must not be surged.
func (d *Drainer) surgeable(ctx context.Context, pod *corev1.Pod) (w workload, quiet bool, why string, err error) {
	w, why, err = d.workloadOf(ctx, pod)
	if err != nil || why != "" {
		return w, why != "", "", err
	}
	var nsAnn map[string]string
	if _, ok := w.Annotations[SurgeAnnotation]; !ok {
		ns, err := d.Client.Namespaces().Get(ctx, w.Namespace, metav1.GetOptions{})
		if err != nil {
			return w, false, "", fmt.Errorf("reading namespace %s: %w", w.Namespace, err)
		}
		nsAnn = ns.Annotations
	}
	if !optedIn(w.Annotations, nsAnn) {
		return w, true, "", nil
	}
	var hpas []autoscalingv2.HorizontalPodAutoscaler
	_, err = kubeapi.Pages(ctx, d.Client.HorizontalPodAutoscalers(w.Namespace).List, metav1.ListOptions{},
		"the HorizontalPodAutoscalers of namespace "+w.Namespace, maxAutoscalers,
		func(l *autoscalingv2.HorizontalPodAutoscalerList) error { hpas = append(hpas, l.Items...); return nil })
	if err != nil {
		return w, false, "", fmt.Errorf("listing the HorizontalPodAutoscalers of namespace %s: %w", w.Namespace, err)
	}
	return w, false, surgeRefusal(w, hpas, time.Now()), nil
}

// maxAutoscalers bounds the HorizontalPodAutoscalers read in a namespace
// (a tenant's objects, read a page at a time).
const maxAutoscalers = 1000

// cutName cuts a name no API object could have for a message.
func cutName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// currentReplicas reads the workload's spec.replicas; a NotFound error also
// when its name now belongs to another object.
func (d *Drainer) currentReplicas(ctx context.Context, w workload) (int32, error) {
	var r *int32
	var uid types.UID
	if w.scaled() {
		sc, err := d.Client.GetScale(ctx, w.target())
		if err != nil {
			return 0, err
		}
		r, uid = &sc.Spec.Replicas, sc.UID
	} else if w.Kind == "StatefulSet" {
		s, err := d.Client.StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		r, uid = s.Spec.Replicas, s.UID
	} else {
		dep, err := d.Client.Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		r, uid = dep.Spec.Replicas, dep.UID
	}
	if w.UID != "" && uid != "" && uid != w.UID {
		return 0, apierrors.NewNotFound(appsv1.Resource(strings.ToLower(w.Kind)+"s"), w.Name)
	}
	return replicas(r), nil
}

// setReplicas changes spec.replicas from one count to another in one JSON
// patch that tests the old count first: a change made meanwhile by anyone
// else fails it instead of being overwritten.
func (d *Drainer) setReplicas(ctx context.Context, w workload, from, to int32) error {
	ops := []map[string]any{
		{"op": "test", "path": "/spec/replicas", "value": from},
		{"op": "replace", "path": "/spec/replicas", "value": to},
	}
	if w.UID != "" {
		ops = append([]map[string]any{{"op": "test", "path": "/metadata/uid", "value": w.UID}}, ops...)
	}
	patch, _ := json.Marshal(ops)
	opts := metav1.PatchOptions{FieldManager: SurgeFieldManager}
	var err error
	if w.scaled() {
		err = d.Client.PatchScale(ctx, w.target(), patch, SurgeFieldManager)
	} else if w.Kind == "StatefulSet" {
		_, err = d.Client.StatefulSets(w.Namespace).Patch(ctx, w.Name, types.JSONPatchType, patch, opts)
	} else {
		_, err = d.Client.Deployments(w.Namespace).Patch(ctx, w.Name, types.JSONPatchType, patch, opts)
	}
	if err != nil {
		return fmt.Errorf("setting the replicas of %s from %d to %d: %w", w, from, to, err)
	}
	return nil
}

// recordOf reads a surge back from its slot Lease.
func recordOf(l coordinationv1.Lease) (surgeRecord, error) {
	parts := strings.Split(l.Annotations[surgeWorkloadAnn], "/")
	from, ferr := strconv.ParseInt(l.Annotations[surgeFromAnn], 10, 32)
	to, terr := strconv.ParseInt(l.Annotations[surgeToAnn], 10, 32)
	api := strings.Fields(l.Annotations[surgeAPIAnn])
	apps := len(parts) == 3 && (parts[0] == "Deployment" || parts[0] == "StatefulSet") && len(api) == 0
	scaled := len(parts) == 3 && parts[0] != "" && len(api) == 2
	if !apps && !scaled || ferr != nil || terr != nil || from < 0 || to != from+1 {
		return surgeRecord{}, fmt.Errorf("lease %s does not record a surge of one replica (annotations %s, %s, %s, %s)", l.Name,
			surgeWorkloadAnn, surgeFromAnn, surgeToAnn, surgeAPIAnn)
	}
	w := workload{APIVersion: "apps/v1", Kind: parts[0], Namespace: parts[1], Name: parts[2],
		UID: types.UID(l.Annotations[surgeUIDAnn])}
	if scaled {
		w.APIVersion, w.Resource = api[0], api[1]
	}
	return surgeRecord{Lease: l.Name, Workload: w, From: int32(from), To: int32(to)}, nil
}

func (d *Drainer) surgeEvent(w workload, warning bool, reason, msg string) {
	if d.Surge.Event != nil {
		d.Surge.Event(w.ref(), warning, reason, msg)
	}
}

func (d *Drainer) surgeCount(result string) {
	if d.Surge.Count != nil {
		d.Surge.Count(result)
	}
}
