package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// ConfigMaps is the ConfigMaps client of the daemon's API, for the one
// ConfigMap per pool it watches (the maintenance windows, daemon/waits). It
// is apart from API so that the API's other implementations need not have
// it; an API without it returns an error.
func ConfigMaps(a API, namespace string) (Resource[*corev1.ConfigMap, *corev1.ConfigMapList], error) {
	switch c := a.(type) {
	case *restAPI:
		return newClient(c, c.core, "configmaps", namespace, func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
			func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} }), nil
	case interface {
		ConfigMaps(string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList]
	}:
		return c.ConfigMaps(namespace), nil
	}
	return nil, fmt.Errorf("the API client %T has no ConfigMaps", a)
}

// NewConfigMapWatch is an informer on the one ConfigMap name (a list+watch
// with fieldSelector metadata.name, so RBAC can grant it by resourceNames).
// After a failure it tries again as retry says (Client.Retry; the zero
// Retry: within MinReconnectJitter, no probe).
func NewConfigMapWatch(r Resource[*corev1.ConfigMap, *corev1.ConfigMapList], name string,
	retry Retry) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(byName(name, retry, r), &corev1.ConfigMap{}, 0, cache.Indexers{})
}
