// Package kubeapi is nodeconfd's own typed client of the Kubernetes API,
// which both processes use: the resources they read and write (API,
// Resource, NewAPI over client-go's REST clients, linking only those
// resources), paginated and bounded lists (Pages), the scale subresource,
// single-attempt lists and watches (AttemptsOf) and an Events recorder. It
// knows no node and no step: the daemon's client of its own node's objects
// is daemon/kube, and the controller's decisions are controller/rollout.
package kubeapi

import (
	"context"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// API is the part of the Kubernetes API the daemon uses. Each resource has
// the methods of client-go's typed clients with the same signatures, so a
// clientset's typed clients satisfy it too (see package kubetest); the
// daemon itself is built with NewAPI, which links only these resources and
// not client-go's whole clientset (a smaller binary and a smaller idle
// memory footprint on every node).
type API interface {
	Nodes() Resource[*corev1.Node, *corev1.NodeList]
	Pods(namespace string) Resource[*corev1.Pod, *corev1.PodList]
	PodDisruptionBudgets(namespace string) Resource[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList]
	Leases(namespace string) Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
	Events(namespace string) Resource[*corev1.Event, *corev1.EventList]
	MachineConfigs() Resource[*mcfgv1.MachineConfig, *mcfgv1.MachineConfigList]
	MachineConfigNodes() Resource[*mcfgv1.MachineConfigNode, *mcfgv1.MachineConfigNodeList]
	// MachineConfigPools are read and written by the controller only.
	MachineConfigPools() Resource[*mcfgv1.MachineConfigPool, *mcfgv1.MachineConfigPoolList]
	// The workloads a drain may surge (drain.Surge): their owners, their
	// autoscalers and their namespace's opt-in.
	Deployments(namespace string) Resource[*appsv1.Deployment, *appsv1.DeploymentList]
	ReplicaSets(namespace string) Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList]
	StatefulSets(namespace string) Resource[*appsv1.StatefulSet, *appsv1.StatefulSetList]
	HorizontalPodAutoscalers(namespace string) Resource[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList]
	Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList]
	// The volumes a reboot waits to see detached (volumes.go).
	VolumeAttachments() Resource[*storagev1.VolumeAttachment, *storagev1.VolumeAttachmentList]
	PersistentVolumes() Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList]
	// ResourceOf, GetScale and PatchScale reach any other workload through
	// its scale subresource (scale.go).
	ResourceOf(ctx context.Context, apiVersion, kind string) (resource string, scalable bool, err error)
	GetScale(ctx context.Context, t ScaleTarget) (*autoscalingv1.Scale, error)
	PatchScale(ctx context.Context, t ScaleTarget, patch []byte, fieldManager string) error
	// Evict posts a policy/v1 Eviction to its pod's eviction subresource,
	// once: a refusal (429 from a PodDisruptionBudget) is returned at once
	// for the caller to retry where it shows, not retried out of sight.
	Evict(ctx context.Context, eviction *policyv1.Eviction) error
}

// Resource is one resource's typed client: the methods every client-go typed
// client has.
type Resource[T runtime.Object, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
		subresources ...string) (T, error)
}
