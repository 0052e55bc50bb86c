package kubeapi

import (
	"fmt"

	opv1 "github.com/openshift/api/operator/v1"
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
