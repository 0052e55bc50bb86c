package main

// column is one additionalPrinterColumn of the MachineConfigNode CRD.
type column struct {
	name        string
	jsonPath    string
	wide        bool // shown only with -o wide (priority 1)
	description string
	// colType is the column's type; "" means string.
	colType string
}

// condition returns a column showing the status of one MachineConfigNode condition.
func condition(name, conditionType string, wide bool, description string) column {
	return column{
		name:        name,
		jsonPath:    `.status.conditions[?(@.type=="` + conditionType + `")].status`,
		wide:        wide,
		description: description,
	}
}

// machineConfigNodeColumns are the columns of `kubectl get machineconfignodes` as the status
// contract lists them: the six primary phases and Age by default, the secondary phases and
// the config versions with -o wide.
var machineConfigNodeColumns = []column{
	condition("Updated", "Updated", false, "True once the desired config has been applied to the node."),
	condition("UpdatePrepared", "UpdatePrepared", false, "True once the new config has been fetched, validated and diffed."),
	condition("UpdateExecuted", "UpdateExecuted", false, "True once the node has been cordoned, drained and its files and OS updated."),
	condition("UpdatePostActionCompleted", "UpdatePostActionComplete", false, "True once the reboot or reload the update needs has finished."),
	condition("UpdateCompleted", "UpdateComplete", false, "True once the node has been uncordoned and its state recorded."),
	condition("Resumed", "Resumed", false, "True once the config drift monitor runs again."),
	// Age, as upstream shows it, ends the default columns as in every kubectl table.
	{name: "Age", jsonPath: ".metadata.creationTimestamp", colType: "date",
		description: "How long ago the MachineConfigNode was created."},
	condition("UpdateCompatible", "UpdateCompatible", true, "Whether the change can be applied to this node."),
	condition("UpdateFilesAndOS", "AppliedFilesAndOS", true, "Whether files, units, SSH keys and the OS image have been written."),
	condition("DrainedNode", "Drained", true, "Whether the node has been drained."),
	condition("CordonedNode", "Cordoned", true, "Whether the node has been cordoned."),
	condition("RebootNode", "RebootedNode", true, "Whether the node has been rebooted."),
	condition("ReloadedCRIO", "ReloadedCRIO", true, "Whether CRI-O has been reloaded."),
	condition("Uncordoned", "Uncordoned", true, "Whether the node has been uncordoned."),
	condition("HealthChecked", "HealthChecked", true, "Whether the node passed the post-update health gate (False, RolledBack: it failed and was rolled back)."),
	{name: "PoolName", jsonPath: ".spec.pool.name", wide: true, description: "The machine config pool of the node."},
	{name: "DesiredConfig", jsonPath: ".spec.configVersion.desired", wide: true, description: "The config the node should run."},
	{name: "CurrentConfig", jsonPath: ".status.configVersion.current", wide: true, description: "The config the node runs."},
	{name: "ETA", jsonPath: ".status.updateETA.estimatedFinish", wide: true,
		description: "When the node's update is predicted to end (nodeconfd's status.updateETA); empty when none runs."},
}

// printerColumns returns the columns in the CRD's wire form.
func printerColumns(columns []column) []any {
	out := make([]any, 0, len(columns))
	for _, c := range columns {
		typ := c.colType
		if typ == "" {
			typ = "string"
		}
		col := map[string]any{
			"name":        c.name,
			"type":        typ,
			"jsonPath":    c.jsonPath,
			"description": c.description,
		}
		if c.wide {
			col["priority"] = 1
		}
		out = append(out, col)
	}
	return out
}
