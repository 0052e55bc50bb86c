// Package surge is the drain's surge protocol, which both processes run:
// a daemon whose drain a PodDisruptionBudget refuses asks, through a slot
// Lease, for one more replica of the pod's owner, and nodeconfd controller
// (Granter, the only writer of a surged workload's replicas) checks the
// request and raises and lowers the count. Here are the Lease's names and
// record, which owners may be surged and why not, and the reads and
// writes of their replicas; the daemon's half (taking and freeing a slot
// while it drains) is daemon/drain.
package surge

import (
	"context"
	"encoding/json"
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

// MaxSlots bounds the daemon's SurgeOptions.Max (--drain-surge-max): the
// admission policy nodeconfd-surge (manifests/04-admission-policy.yaml)
// lets a daemon write only the slot Leases nodeconfd-surge-0 …
// nodeconfd-surge-99, so that a stolen daemon token cannot fill etcd with
// Leases. Raise it only with the policy's name pattern.
const MaxSlots = 100

// A slot Lease: the daemon writes the label, the holder and the pod (and
// nothing else: the policy nodeconfd-surge bounds it to that); the
// controller writes the record and the answer.
const (
	LeasePrefix        = "nodeconfd-surge-"
	NodeLabel          = "nodeconfd.io/surge-node"
	PodAnnotation      = "nodeconfd.io/surge-pod"      // namespace/name, the daemon's request
	WorkloadAnnotation = "nodeconfd.io/surge-workload" // Kind/namespace/name
	UIDAnnotation      = "nodeconfd.io/surge-uid"
	FromAnnotation     = "nodeconfd.io/surge-from"
	ToAnnotation       = "nodeconfd.io/surge-to"
	// APIAnnotation is "<apiVersion> <resource>" of a workload reached
	// through its scale subresource.
	APIAnnotation = "nodeconfd.io/surge-api"
	// RaisedAnnotation is the controller's answer once the replicas are
	// raised; RefusedAnnotation its refusal, with why.
	RaisedAnnotation  = "nodeconfd.io/surge-raised"
	RefusedAnnotation = "nodeconfd.io/surge-refused"
	// Finalizer holds a granted slot Lease until the controller has
	// put the replicas back.
	Finalizer = "nodeconfd.io/surge"
)

// Record is one surge: the workload and its replicas before and during
// it, and the slot Lease that records it.
type Record struct {
	Lease    string
	Workload Workload
	From, To int32
}

func (s Record) String() string {
	return fmt.Sprintf("%s (%d → %d → %d replicas)", s.Workload, s.From, s.To, s.From)
}

// workloadOf finds the Deployment or StatefulSet that owns the pod; ok is
// false (with why) when no such owner would scale it.
func workloadOf(ctx context.Context, client kubeapi.API, pod *corev1.Pod) (w Workload, why string, err error) {
	c := metav1.GetControllerOf(pod)
	switch {
	case c == nil:
		return w, "pod " + pod.Namespace + "/" + pod.Name + " has no controller", nil
	case len(validation.IsDNS1123Subdomain(c.Name)) > 0:
		// The API server checks an owner reference's name only for being
		// there: a tenant's may hold anything, and is never read nor
		// quoted raw.
		return w, fmt.Sprintf("pod %s's controller is named %q, not an object name", pod.Namespace+"/"+pod.Name, cutName(c.Name)), nil
	case c.Kind == "StatefulSet" && strings.HasPrefix(c.APIVersion, "apps/"):
		s, err := client.StatefulSets(pod.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return w, "", fmt.Errorf("reading StatefulSet %s/%s: %w", pod.Namespace, c.Name, err)
		}
		return Workload{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name, UID: s.UID, Replicas: Replicas(s.Spec.Replicas),
			Annotations: s.Annotations, ManagedFields: s.ManagedFields,
			Parallel: s.Spec.PodManagementPolicy == appsv1.ParallelPodManagement}, "", nil
	case c.Kind == "ReplicaSet" && strings.HasPrefix(c.APIVersion, "apps/"):
		rs, err := client.ReplicaSets(pod.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return w, "", fmt.Errorf("reading ReplicaSet %s/%s: %w", pod.Namespace, c.Name, err)
		}
		dc := metav1.GetControllerOf(rs)
		if dc != nil && len(validation.IsDNS1123Subdomain(dc.Name)) > 0 {
			return w, fmt.Sprintf("ReplicaSet %s/%s's controller is named %q, not an object name", rs.Namespace, rs.Name, cutName(dc.Name)), nil
		}
		if dc == nil || dc.Kind != "Deployment" {
			return scaledWorkload(ctx, client, pod.Namespace, c) // a ReplicaSet of its own
		}
		dep, err := client.Deployments(pod.Namespace).Get(ctx, dc.Name, metav1.GetOptions{})
		if err != nil {
			return w, "", fmt.Errorf("reading Deployment %s/%s: %w", pod.Namespace, dc.Name, err)
		}
		return Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: dep.Namespace, Name: dep.Name, UID: dep.UID,
			Replicas: Replicas(dep.Spec.Replicas), Annotations: dep.Annotations, ManagedFields: dep.ManagedFields}, "", nil
	}
	return scaledWorkload(ctx, client, pod.Namespace, c)
}

// scaledWorkload is an owner of another kind, reached through its scale
// subresource when it has one. Its annotations and managed fields are not
// read (that would take a read of every kind in the cluster): it opts in
// through its namespace, and only an autoscaler keeps it from a surge.
func scaledWorkload(ctx context.Context, client kubeapi.API, ns string, c *metav1.OwnerReference) (w Workload, why string, err error) {
	resource, scalable, err := client.ResourceOf(ctx, c.APIVersion, c.Kind)
	if err != nil {
		return w, "", err
	}
	if !scalable {
		return w, c.Kind + " " + c.Name + " has no scale subresource", nil
	}
	w = Workload{APIVersion: c.APIVersion, Resource: resource, Kind: c.Kind, Namespace: ns, Name: c.Name, UID: c.UID}
	sc, err := client.GetScale(ctx, w.Target())
	if err != nil {
		return w, "", fmt.Errorf("reading the scale of %s: %w", w, err)
	}
	w.Replicas = sc.Spec.Replicas
	return w, "", nil
}

// Replicas is a spec.replicas, 1 when unset.
func Replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// Surgeable reads what decides a surge of the pod's owner: quiet is true
// when the owner did not opt in (nothing to say), why is set when it opted
// in but must not be surged.
func Surgeable(ctx context.Context, client kubeapi.API, pod *corev1.Pod) (w Workload, quiet bool, why string, err error) {
	w, why, err = workloadOf(ctx, client, pod)
	if err != nil || why != "" {
		return w, why != "", "", err
	}
	var nsAnn map[string]string
	if _, ok := w.Annotations[Annotation]; !ok {
		ns, err := client.Namespaces().Get(ctx, w.Namespace, metav1.GetOptions{})
		if err != nil {
			return w, false, "", fmt.Errorf("reading namespace %s: %w", w.Namespace, err)
		}
		nsAnn = ns.Annotations
	}
	if !optedIn(w.Annotations, nsAnn) {
		return w, true, "", nil
	}
	var hpas []autoscalingv2.HorizontalPodAutoscaler
	_, err = kubeapi.Pages(ctx, client.HorizontalPodAutoscalers(w.Namespace).List, metav1.ListOptions{},
		"the HorizontalPodAutoscalers of namespace "+w.Namespace, maxAutoscalers,
		func(l *autoscalingv2.HorizontalPodAutoscalerList) error { hpas = append(hpas, l.Items...); return nil })
	if err != nil {
		return w, false, "", fmt.Errorf("listing the HorizontalPodAutoscalers of namespace %s: %w", w.Namespace, err)
	}
	return w, false, refusal(w, hpas, time.Now()), nil
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

// CurrentReplicas reads the workload's spec.replicas; a NotFound error also
// when its name now belongs to another object.
func CurrentReplicas(ctx context.Context, client kubeapi.API, w Workload) (int32, error) {
	var r *int32
	var uid types.UID
	if w.Scaled() {
		sc, err := client.GetScale(ctx, w.Target())
		if err != nil {
			return 0, err
		}
		r, uid = &sc.Spec.Replicas, sc.UID
	} else if w.Kind == "StatefulSet" {
		s, err := client.StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		r, uid = s.Spec.Replicas, s.UID
	} else {
		dep, err := client.Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		r, uid = dep.Spec.Replicas, dep.UID
	}
	if w.UID != "" && uid != "" && uid != w.UID {
		return 0, apierrors.NewNotFound(appsv1.Resource(strings.ToLower(w.Kind)+"s"), w.Name)
	}
	return Replicas(r), nil
}

// setReplicas changes spec.replicas from one count to another in one JSON
// patch that tests the old count first: a change made meanwhile by anyone
// else fails it instead of being overwritten.
func setReplicas(ctx context.Context, client kubeapi.API, w Workload, from, to int32) error {
	ops := []map[string]any{
		{"op": "test", "path": "/spec/replicas", "value": from},
		{"op": "replace", "path": "/spec/replicas", "value": to},
	}
	if w.UID != "" {
		ops = append([]map[string]any{{"op": "test", "path": "/metadata/uid", "value": w.UID}}, ops...)
	}
	patch, _ := json.Marshal(ops)
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	var err error
	if w.Scaled() {
		err = client.PatchScale(ctx, w.Target(), patch, FieldManager)
	} else if w.Kind == "StatefulSet" {
		_, err = client.StatefulSets(w.Namespace).Patch(ctx, w.Name, types.JSONPatchType, patch, opts)
	} else {
		_, err = client.Deployments(w.Namespace).Patch(ctx, w.Name, types.JSONPatchType, patch, opts)
	}
	if err != nil {
		return fmt.Errorf("setting the replicas of %s from %d to %d: %w", w, from, to, err)
	}
	return nil
}

// RecordOf reads a surge back from its slot Lease.
func RecordOf(l coordinationv1.Lease) (Record, error) {
	parts := strings.Split(l.Annotations[WorkloadAnnotation], "/")
	from, ferr := strconv.ParseInt(l.Annotations[FromAnnotation], 10, 32)
	to, terr := strconv.ParseInt(l.Annotations[ToAnnotation], 10, 32)
	api := strings.Fields(l.Annotations[APIAnnotation])
	apps := len(parts) == 3 && (parts[0] == "Deployment" || parts[0] == "StatefulSet") && len(api) == 0
	scaled := len(parts) == 3 && parts[0] != "" && len(api) == 2
	if !apps && !scaled || ferr != nil || terr != nil || from < 0 || to != from+1 {
		return Record{}, fmt.Errorf("lease %s does not record a surge of one replica (annotations %s, %s, %s, %s)", l.Name,
			WorkloadAnnotation, FromAnnotation, ToAnnotation, APIAnnotation)
	}
	w := Workload{APIVersion: "apps/v1", Kind: parts[0], Namespace: parts[1], Name: parts[2],
		UID: types.UID(l.Annotations[UIDAnnotation])}
	if scaled {
		w.APIVersion, w.Resource = api[0], api[1]
	}
	return Record{Lease: l.Name, Workload: w, From: int32(from), To: int32(to)}, nil
}
