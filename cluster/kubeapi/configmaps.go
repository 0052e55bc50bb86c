package kubeapi

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
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
