package kubeapi

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

func (a *restAPI) Deployments(namespace string) Resource[*appsv1.Deployment, *appsv1.DeploymentList] {
	return newClient(a, a.apps, "deployments", namespace, func() *appsv1.Deployment { return &appsv1.Deployment{} },
		func() *appsv1.DeploymentList { return &appsv1.DeploymentList{} })
}

func (a *restAPI) ReplicaSets(namespace string) Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList] {
	return newClient(a, a.apps, "replicasets", namespace, func() *appsv1.ReplicaSet { return &appsv1.ReplicaSet{} },
		func() *appsv1.ReplicaSetList { return &appsv1.ReplicaSetList{} })
}

func (a *restAPI) StatefulSets(namespace string) Resource[*appsv1.StatefulSet, *appsv1.StatefulSetList] {
	return newClient(a, a.apps, "statefulsets", namespace, func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} },
		func() *appsv1.StatefulSetList { return &appsv1.StatefulSetList{} })
}

func (a *restAPI) HorizontalPodAutoscalers(namespace string) Resource[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList] {
	return newClient(a, a.autoscaling, "horizontalpodautoscalers", namespace,
		func() *autoscalingv2.HorizontalPodAutoscaler { return &autoscalingv2.HorizontalPodAutoscaler{} },
		func() *autoscalingv2.HorizontalPodAutoscalerList { return &autoscalingv2.HorizontalPodAutoscalerList{} })
}

func (a *restAPI) Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return newClient(a, a.core, "namespaces", "", func() *corev1.Namespace { return &corev1.Namespace{} },
		func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

func (a *restAPI) ResourceOf(ctx context.Context, apiVersion, kind string) (string, bool, error) {
	return scales{a.core}.ResourceOf(ctx, apiVersion, kind)
}

func (a *restAPI) GetScale(ctx context.Context, t ScaleTarget) (*autoscalingv1.Scale, error) {
	return scales{a.core}.GetScale(ctx, t)
}

func (a *restAPI) PatchScale(ctx context.Context, t ScaleTarget, patch []byte, fieldManager string) error {
	return scales{a.core}.PatchScale(ctx, t, patch, fieldManager)
}
