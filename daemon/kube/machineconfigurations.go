package kube

import (
	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/names"
	opv1 "github.com/openshift/api/operator/v1"
	"k8s.io/client-go/tools/cache"
)

// NewMachineConfigurationWatch is an informer on the MachineConfiguration
// named cluster (a list+watch by name, which RBAC grants by resourceNames).
func NewMachineConfigurationWatch(r kubeapi.Resource[*opv1.MachineConfiguration, *opv1.MachineConfigurationList],
	retry Retry) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(byName(names.MachineConfigurationName, retry, r), &opv1.MachineConfiguration{}, 0,
		cache.Indexers{})
}
