// Package names holds the names both processes share: the Node annotations
// and labels the daemon and the controller read and write to each other,
// the values of the state annotation, the field manager and the one
// MachineConfiguration both read. It is constants only, with no imports,
// so that the controller can name what the daemon writes without importing
// the daemon or its steps (controller/imports_test.go guards it).
package names

// FieldManager names nodeconfd in managedFields.
const FieldManager = "nodeconfd"

// Node annotations (the compatible view of the update).
const (
	AnnotationPrefix = "machineconfiguration.openshift.io/"
	// CurrentConfig is the rendered config the node runs (the daemon's).
	CurrentConfig = AnnotationPrefix + "currentConfig"
	// DesiredConfig is the rendered config the node is told to run (the
	// controller's).
	DesiredConfig = AnnotationPrefix + "desiredConfig"
	// ControlPlaneTopology is the cluster's topology as upstream's node
	// controller annotates every Node; SingleReplica (a single-node
	// cluster) means no drain (plan.PostAction.OnSingleNode).
	ControlPlaneTopology = AnnotationPrefix + "controlPlaneTopology"
	// State is the daemon's state: one of the State values below.
	State = AnnotationPrefix + "state"
	// Reason is the daemon's explanation of a Degraded state.
	Reason = AnnotationPrefix + "reason"
	// SingleReplica is ControlPlaneTopology's value on a single-node
	// cluster.
	SingleReplica = "SingleReplica"
)

// CordonedBy is the Node annotation that marks a cordon the daemon set. It
// is written in the same patch as spec.unschedulable, so the two always
// agree: an uncordon lifts only a cordon that carries it, a daemon that
// restarts finds its own cordon by it, and the controller grants a surge
// only to a node that carries it.
const CordonedBy = AnnotationPrefix + "cordonedBy"

// Values of the State annotation.
const (
	StateDone           = "Done"
	StateWorking        = "Working"
	StateDegraded       = "Degraded"
	StateUnreconcilable = "Unreconcilable"
)

// The health gate's Node annotations and label (docs/status.md, "Health
// gate").
const (
	// FailedConfig is the daemon's: the config that failed the health gate
	// on the node and was rolled back. Other nodes do not take it up while
	// it is there.
	FailedConfig = AnnotationPrefix + "failedConfig"
	// RetryFailedConfig is the administrator's: a new value (any, a date
	// or a counter) makes a node holding its previous config after a
	// failed health gate try the failed config again.
	RetryFailedConfig = AnnotationPrefix + "retryFailedConfig"
	// FailedConfigHashLabel is the daemon's index of FailedConfig: its
	// value is a hash of the annotation's (a label value has at most 63
	// characters, a config name more; daemon/kube.FailedConfigHash), so
	// that the other nodes find the nodes on which a config failed with a
	// label selector (a small LIST, a WATCH) instead of listing every
	// Node. The annotation stays the truth: a label without it holds no
	// one.
	FailedConfigHashLabel = AnnotationPrefix + "failedConfigHash"
)

// Reboot requests (issue 30): the node asks with RebootRequested, on its
// own Node; nodeconfd controller answers with RebootGranted, repeating
// the request, when the node's pool has room.
const (
	// RebootRequested asks for a reboot of the node; its value says why (an
	// administrator's text, or the daemon's for the reboot-required
	// sentinel). The daemon removes it once the node has rebooted.
	RebootRequested = "nodeconfd.io/reboot-requested"
	// RebootGranted is the controller's: the node's turn, its value the
	// request it answers.
	RebootGranted = "nodeconfd.io/reboot-granted"
)

// PauseAnnotation on a Node pauses its updates; its value says who paused
// it and why ("alice: db migration"). An administrator sets it; the daemon
// only reads it, and the controller hands a paused node no config.
const PauseAnnotation = "nodeconfd.io/pause"

// Reapply is the administrator's request that the daemon bring its node
// back to the config it runs, whatever its files say (a config drift, a
// file an administrator edited by hand): the daemon forgets what the node
// runs and updates it to its desired config, adopting it when every file
// already matches (upstream's force file, /run/machine-config-daemon-force,
// as an annotation). The value says who and why; the daemon removes it
// when it starts the update, and only the daemon of its node or an
// administrator may remove it (04-admission-policy.yaml).
const Reapply = "nodeconfd.io/reapply"

// MachineConfigurationName is the one MachineConfiguration both processes
// read (upstream's operator knobs object): the node disruption policy.
const MachineConfigurationName = "cluster"
