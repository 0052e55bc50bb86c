// Package kubetest adapts client-go's clientsets (real or fake) to
// kubeapi.API, for tests. The daemon itself never imports it, so its
// binary does not link the whole clientset.
package kubetest

import (
	"context"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// API is kubeapi.API over a Kubernetes clientset and a MachineConfig
// clientset (nil when a test needs no MachineConfig objects).
func API(k kubernetes.Interface, m mcfgclient.Interface) kubeapi.API { return clientsets{k, m} }

type clientsets struct {
	k kubernetes.Interface
	m mcfgclient.Interface
}

func (c clientsets) Nodes() kubeapi.Resource[*corev1.Node, *corev1.NodeList] {
	return c.k.CoreV1().Nodes()
}

func (c clientsets) Pods(namespace string) kubeapi.Resource[*corev1.Pod, *corev1.PodList] {
	return c.k.CoreV1().Pods(namespace)
}

// Evict is kubeapi.API's Evict: one request, no retry. A fake clientset
// records it as a create of pods/eviction.
func (c clientsets) Evict(ctx context.Context, eviction *policyv1.Eviction) error {
	if rc, ok := c.k.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil {
		return rc.Post().Namespace(eviction.Namespace).Resource("pods").Name(eviction.Name).
			SubResource("eviction").Body(eviction).MaxRetries(0).Do(ctx).Error()
	}
	return c.k.CoreV1().Pods(eviction.Namespace).EvictV1(ctx, eviction)
}

func (c clientsets) PodDisruptionBudgets(namespace string) kubeapi.Resource[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList] {
	return c.k.PolicyV1().PodDisruptionBudgets(namespace)
}

func (c clientsets) Leases(namespace string) kubeapi.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return c.k.CoordinationV1().Leases(namespace)
}

func (c clientsets) Events(namespace string) kubeapi.Resource[*corev1.Event, *corev1.EventList] {
	return c.k.CoreV1().Events(namespace)
}

func (c clientsets) MachineConfigs() kubeapi.Resource[*mcfgv1.MachineConfig, *mcfgv1.MachineConfigList] {
	return c.m.MachineconfigurationV1().MachineConfigs()
}

func (c clientsets) MachineConfigPools() kubeapi.Resource[*mcfgv1.MachineConfigPool, *mcfgv1.MachineConfigPoolList] {
	return c.m.MachineconfigurationV1().MachineConfigPools()
}

func (c clientsets) MachineConfigNodes() kubeapi.Resource[*mcfgv1.MachineConfigNode, *mcfgv1.MachineConfigNodeList] {
	return c.m.MachineconfigurationV1().MachineConfigNodes()
}

func (c clientsets) Deployments(namespace string) kubeapi.Resource[*appsv1.Deployment, *appsv1.DeploymentList] {
	return c.k.AppsV1().Deployments(namespace)
}

func (c clientsets) ReplicaSets(namespace string) kubeapi.Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList] {
	return c.k.AppsV1().ReplicaSets(namespace)
}

func (c clientsets) StatefulSets(namespace string) kubeapi.Resource[*appsv1.StatefulSet, *appsv1.StatefulSetList] {
	return c.k.AppsV1().StatefulSets(namespace)
}

func (c clientsets) HorizontalPodAutoscalers(namespace string) kubeapi.Resource[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList] {
	return c.k.AutoscalingV2().HorizontalPodAutoscalers(namespace)
}

func (c clientsets) Namespaces() kubeapi.Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return c.k.CoreV1().Namespaces()
}

func (c clientsets) VolumeAttachments() kubeapi.Resource[*storagev1.VolumeAttachment, *storagev1.VolumeAttachmentList] {
	return c.k.StorageV1().VolumeAttachments()
}

func (c clientsets) PersistentVolumes() kubeapi.Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList] {
	return c.k.CoreV1().PersistentVolumes()
}

func (c clientsets) ResourceOf(ctx context.Context, apiVersion, kind string) (string, bool, error) {
	return kubeapi.Scales(c.k.CoreV1().RESTClient()).ResourceOf(ctx, apiVersion, kind)
}

func (c clientsets) GetScale(ctx context.Context, t kubeapi.ScaleTarget) (*autoscalingv1.Scale, error) {
	return kubeapi.Scales(c.k.CoreV1().RESTClient()).GetScale(ctx, t)
}

func (c clientsets) PatchScale(ctx context.Context, t kubeapi.ScaleTarget, patch []byte, fieldManager string) error {
	return kubeapi.Scales(c.k.CoreV1().RESTClient()).PatchScale(ctx, t, patch, fieldManager)
}
