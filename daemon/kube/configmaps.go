package kube

import (
	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// NewConfigMapWatch is an informer on the one ConfigMap name (a list+watch
// with fieldSelector metadata.name, so RBAC can grant it by resourceNames).
// After a failure it tries again as retry says (Client.Retry; the zero
// Retry: within MinReconnectJitter, no probe).
func NewConfigMapWatch(r kubeapi.Resource[*corev1.ConfigMap, *corev1.ConfigMapList], name string,
	retry Retry) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(byName(name, retry, r), &corev1.ConfigMap{}, 0, cache.Indexers{})
}
