package kube

import (
	"fmt"

	"github.com/nodeconfd/nodeconfd/names"
	opv1 "github.com/openshift/api/operator/v1"
	"k8s.io/client-go/tools/cache"
)

// MachineConfigurations is the MachineConfiguration client of the daemon's
// API (operator.openshift.io/v1, cluster-scoped), for the node disruption
// policy. Apart from API, as ConfigMaps, so that the API's other
// implementations need not have it.
func MachineConfigurations(a API) (Resource[*opv1.MachineConfiguration, *opv1.MachineConfigurationList], error) {
	switch c := a.(type) {
	case *restAPI:
		return newClient(c, c.operator, "machineconfigurations", "",
			func() *opv1.MachineConfiguration { return &opv1.MachineConfiguration{} },
			func() *opv1.MachineConfigurationList { return &opv1.MachineConfigurationList{} }), nil
	case interface {
		MachineConfigurations() Resource[*opv1.MachineConfiguration, *opv1.MachineConfigurationList]
	}:
		return c.MachineConfigurations(), nil
	}
	return nil, fmt.Errorf("the API client %T has no MachineConfigurations", a)
}

// NewMachineConfigurationWatch is an informer on the MachineConfiguration
// named cluster (a list+watch by name, which RBAC grants by resourceNames).
func NewMachineConfigurationWatch(r Resource[*opv1.MachineConfiguration, *opv1.MachineConfigurationList],
	retry Retry) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(byName(names.MachineConfigurationName, retry, r), &opv1.MachineConfiguration{}, 0,
		cache.Indexers{})
}
