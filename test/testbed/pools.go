package testbed

// CustomPoolYAML is a custom MachineConfigPool as the OpenShift
// documentation makes one: its nodes labelled node-role.kubernetes.io/<name>,
// the worker MachineConfigs and its own.
func CustomPoolYAML(name string) string {
	return `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: ` + name + `
spec:
  machineConfigSelector:
    matchExpressions:
    - {key: machineconfiguration.openshift.io/role, operator: In, values: [worker, ` + name + `]}
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/` + name + `: ""
`
}
