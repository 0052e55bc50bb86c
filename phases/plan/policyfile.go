package plan

import (
	"bytes"
	"fmt"

	opv1 "github.com/openshift/api/operator/v1"
	"sigs.k8s.io/yaml"
)

// ParsePolicyFile reads a node disruption policy from a file (for `plan`
// and `start --once-from`, which have no cluster to read it from): either
// a document holding a nodeDisruptionPolicy block, or a whole
// MachineConfiguration (`oc get machineconfiguration cluster -o yaml`). It
// returns the policy merged over the defaults. The old private format
// (rules: [{path, action, unit}]) is refused with how to convert it.
func ParsePolicyFile(data []byte, name string) (Policy, error) {
	object := "file " + name
	var probe map[string]any
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return Policy{}, fmt.Errorf("reading the node disruption policy %s: %w", object, err)
	}
	if _, old := probe["rules"]; old {
		return Policy{}, fmt.Errorf("the node disruption policy %s is in the old --post-action-policy format (rules:), "+
			"which is no longer read: write it as the MachineConfiguration API's nodeDisruptionPolicy block, e.g. "+
			"`{path: /etc/foo/, action: Restart, unit: foo.service}` becomes "+
			"`nodeDisruptionPolicy: {files: [{path: /etc/foo, actions: [{type: Restart, restart: {serviceName: foo.service}}]}]}` "+
			"(ReloadCRIO becomes {type: Reload, reload: {serviceName: crio.service}}; see docs/disruption-policy.md)", object)
	}
	var cfg opv1.NodeDisruptionPolicyConfig
	if probe["kind"] == "MachineConfiguration" {
		var mc opv1.MachineConfiguration
		if err := yaml.UnmarshalStrict(data, &mc); err != nil {
			return Policy{}, fmt.Errorf("reading the MachineConfiguration in %s: %w", object, err)
		}
		cfg = mc.Spec.NodeDisruptionPolicy
		object = fmt.Sprintf("MachineConfiguration %s (%s)", mc.Name, object)
	} else {
		var f struct {
			NodeDisruptionPolicy *opv1.NodeDisruptionPolicyConfig `json:"nodeDisruptionPolicy"`
		}
		if err := yaml.UnmarshalStrict(data, &f); err != nil {
			return Policy{}, fmt.Errorf("reading the node disruption policy %s: %w", object, err)
		}
		if f.NodeDisruptionPolicy == nil && len(bytes.TrimSpace(data)) > 0 {
			return Policy{}, fmt.Errorf("the node disruption policy %s has no nodeDisruptionPolicy block", object)
		}
		if f.NodeDisruptionPolicy != nil {
			cfg = *f.NodeDisruptionPolicy
		}
	}
	return PolicyFromAPI(cfg, object)
}
