package status

// The post-update health gate's condition and reasons (docs/status.md,
// "Health gate").
const (
	// HealthChecked is the health gate's condition, a secondary under
	// UpdateComplete: Unknown while the gate checks (the message says
	// what it waits for) or rolls back, True when the node is healthy on
	// the desired config, False with reason RolledBack once a failed
	// config was rolled back.
	HealthChecked = "HealthChecked"
	// ReasonRolledBack is HealthChecked's and UpdateComplete's reason once
	// the gate failed and the node was rolled back to its previous config.
	ReasonRolledBack = "RolledBack"
	// ReasonHealthCheckFailed is NodeDegraded's reason then.
	ReasonHealthCheckFailed = "HealthCheckFailed"
)
