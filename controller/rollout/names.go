// Package rollout holds the pool controller's pure decisions: which nodes
// are unavailable, which node gets the pool's rendered config next, and the
// pool's status (which pool a node is in is phases/pools, shared with the
// daemon). It reads API objects only
// (no clients, no I/O), so that every decision is table-tested; the
// controller in package controller reads the caches, calls these functions
// and writes what they decide.
package rollout

// Node annotations and labels the decisions read. The daemon defines the
// same names in daemon/kube and daemon/waits, which import client-go; they
// are repeated here so this package stays pure, and names_test.go checks
// that both agree.
const (
	annotationPrefix = "machineconfiguration.openshift.io/"
	// CurrentConfig is the rendered config the node runs (the daemon's).
	CurrentConfig = annotationPrefix + "currentConfig"
	// DesiredConfig is the rendered config the node is told to run (the
	// controller's; the one annotation it writes).
	DesiredConfig = annotationPrefix + "desiredConfig"
	// State is the daemon's state: Done, Working, Degraded, Unreconcilable.
	State = annotationPrefix + "state"
	// Reason is the daemon's explanation of a Degraded state.
	Reason = annotationPrefix + "reason"
	// FailedConfig names the config that failed the health gate on the node.
	FailedConfig = annotationPrefix + "failedConfig"
	// PauseAnnotation holds a node's updates; its value says who and why.
	PauseAnnotation = "nodeconfd.io/pause"
	// RebootRequested asks for a reboot of the node, its value saying why
	// (an administrator's, or the daemon's when it finds the node's
	// reboot-required sentinel); the daemon removes it once rebooted.
	RebootRequested = "nodeconfd.io/reboot-requested"
	// RebootGranted is the controller's answer: the node's turn to reboot,
	// its value the request it grants.
	RebootGranted = "nodeconfd.io/reboot-granted"
	// ZoneLabel orders the rollout zone by zone, as upstream.
	ZoneLabel = "topology.kubernetes.io/zone"
)

// Values of the State annotation.
const (
	StateDone           = "Done"
	StateWorking        = "Working"
	StateDegraded       = "Degraded"
	StateUnreconcilable = "Unreconcilable"
)
