package main

import "fmt"

// ownStatusFields are status fields of nodeconfd's own, not in any variant of openshift/api's CRD,
// added to the MachineConfigNode's schema (docs/status.md, "ETA"). A CRD without them (OpenShift's)
// prunes them: the daemon writes them in the same merge patch as the rest, so that costs nothing.
func ownStatusFields() map[string]any {
	date := func(desc string) map[string]any {
		return map[string]any{"type": "string", "format": "date-time", "description": desc}
	}
	return map[string]any{
		"updateETA": map[string]any{
			"type": "object",
			"description": "updateETA is nodeconfd's prediction of when the node's update ends, from the " +
				"durations of the node's own past updates of the same kind. Written by the node's daemon.",
			"properties": map[string]any{
				"postAction": map[string]any{"type": "string", "enum": []any{"", "Reboot", "Reload", "None"},
					"description": "postAction is the kind of update predicted for; empty before the update is prepared."},
				"started":         date("started is when the update began."),
				"estimatedFinish": date("estimatedFinish is when the update is predicted to end; absent once it ended or failed."),
				"finished":        date("finished is when the update ended; absent while it runs."),
				"basedOn": map[string]any{"type": "integer", "format": "int32", "minimum": 0,
					"description": "basedOn is how many past updates of the kind the prediction is drawn from; 0 means the defaults."},
			},
		},
	}
}

// addOwn adds ownStatusFields to every version of obj.
func addOwn(obj map[string]any) error {
	for name, v := range versionsByName(obj) {
		props, err := statusProperties(v)
		if err != nil {
			return err
		}
		for k, f := range ownStatusFields() {
			if _, ok := props[k]; ok {
				return fmt.Errorf("version %s: status.%s is upstream's now: drop it from ownStatusFields", name, k)
			}
			props[k] = f
		}
	}
	return nil
}
