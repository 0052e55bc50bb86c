// Package phases steps a node from its current rendered MachineConfig to the
// desired one. Each phase is a value (prepare, cordon, drain, write, the post
// actions, complete, resume) run in order by one Runner, which owns status
// reporting, logging, progress saving and error wrapping. Phases see only the
// narrow interfaces below, never client-go or D-Bus.
package phases

import (
	"context"
	"errors"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/phases/engine"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// Configs fetches rendered MachineConfigs by name (a GET, never a LIST).
type Configs interface {
	MachineConfig(ctx context.Context, name string) (*mcfgv1.MachineConfig, error)
}

// Cluster is what the phases do to the node's API objects.
type Cluster interface {
	// Cordon marks the node unschedulable and reports whether the cordon
	// is this daemon's: true when this call cordoned it or the daemon had
	// (its cordon annotation is there), false when an administrator had.
	// Its errors name the node.
	Cordon(ctx context.Context) (ours bool, err error)
	// Uncordon lifts this daemon's cordon; a node without its annotation is
	// left alone. Its errors name the node.
	Uncordon(ctx context.Context) error
	// CheckDrain reports whether a drain could start: it fails, without
	// touching anything, when the node has pods the drain would refuse to
	// evict (the error then wraps ErrCannotDrain).
	CheckDrain(ctx context.Context) error
	// Drain evicts the node's pods and tells progress how it goes. With the
	// fail policy it gives up after its timeout with an error that wraps
	// ErrDrainTimedOut.
	Drain(ctx context.Context, progress DrainProgress) (DrainResult, error)
	// Steer puts (on) or takes off the daemon's PreferNoSchedule taint,
	// which keeps new pods away from a node whose disruptive update waits
	// before its cordon; taking off a taint that is not there is no
	// request. Its errors name the node.
	Steer(ctx context.Context, on bool) error
	// SetNodeState writes the node's currentConfig, state and reason
	// annotations (empty values are left alone, except reason which is cleared).
	SetNodeState(ctx context.Context, currentConfig, state, reason string) error
}

// DrainProgress receives a running drain's news.
type DrainProgress interface {
	// Progress is the Drained condition's live message; it comes at most
	// every few seconds.
	Progress(message string)
	// Blocked says the drain is past its timeout and still blocked, and on
	// what; it comes once per timeout period.
	Blocked(message string)
}

// ErrDrainTimedOut is wrapped by the error of a drain that gave up at its
// timeout (the fail policy). The Drain phase then undoes its cordon, and the
// update is retried later from the cordon.
var ErrDrainTimedOut = errors.New("drain timed out")

// ErrCannotDrain is wrapped by the error of a drain that cannot go on
// whatever it waits for (pods without a controller, which the drain does
// not evict). The Drain phase undoes its cordon then, as after a timeout.
var ErrCannotDrain = errors.New("node cannot be drained")

// DrainResult sums up a finished drain (the figures for metrics).
type DrainResult struct {
	// Evicted counts the pods evicted; Skipped the DaemonSet and mirror
	// pods left in place.
	Evicted, Skipped int
	// Took is the drain's duration; Blocked the part of it during which at
	// least one eviction was refused (a PodDisruptionBudget, an error).
	Took, Blocked time.Duration
	// Surged names each workload whose replicas the drain raised by one
	// to evict its pod without breaking its PodDisruptionBudget.
	Surged []string
}

// Txn is one update's writes on the node, undone in reverse order by Rollback.
type Txn interface {
	// WriteFiles writes files in one batch (one journal sync for all).
	WriteFiles(files []plan.File) error
	RemoveFile(path string) error
	WriteUnit(u plan.Unit) error
	RemoveUnit(u plan.Unit) error
	// WriteSSHKeys makes user's ~/.ssh/authorized_keys hold keys (home
	// from the node's passwd; the user must exist); no keys removes the
	// file, putting back what was there before the daemon first wrote it.
	WriteSSHKeys(user string, keys []string) error
	// SetPasswordHash sets user core's password hash in /etc/shadow, as
	// `usermod -p` does; "" sets "*" (no password).
	SetPasswordHash(hash string) error
	// RecordUnitStates journals units' enablement (name to IsEnabled
	// state) before the update changes it; Rollback restores it through
	// systemd. A unit journaled before keeps its first state.
	RecordUnitStates(states map[string]string) error
	// Journaled says what Rollback would undo: the number of paths and
	// the units whose enablement is journaled.
	Journaled() (paths int, units []string)
	// CreatedDirs are the folders the writes created (parents first);
	// RemoveEmptyDirs removes those of them that are empty, journaled, and
	// says how many: the health gate's rollback of a committed update
	// takes away the folders the update made.
	CreatedDirs() []string
	RemoveEmptyDirs(paths []string) (int, error)
	Rollback() error
	Commit() error
}

// Host is the node's filesystem, reached through the root mount.
type Host interface {
	BeginTxn(id string) (Txn, error)
	// PendingTxns lists the ids of the journals neither committed nor
	// rolled back (see CleanLeftovers).
	PendingTxns() ([]string, error)
	CheckFile(f plan.File) error
	CheckUnit(u plan.Unit) error
	// CheckSSHKeys checks user's authorized_keys: keys, mode and owner.
	CheckSSHKeys(user string, keys []string) error
	// Preflight checks, reading only, that the node can take diff from
	// current to desired: owners against its passwd and group, every path
	// to write or remove, each changed user's SSH folder. It runs in prepare, before the
	// cordon; its refusals are *plan.ConfigError naming the field.
	Preflight(current, desired plan.Config, diff plan.Diff) error
	WriteState(name string, data []byte) error
	ReadState(name string) ([]byte, error)
}

// Units is the node's systemd, as `systemctl` would drive it.
type Units interface {
	DaemonReload(ctx context.Context) error
	Enable(ctx context.Context, units ...string) error
	Disable(ctx context.Context, units ...string) error
	Mask(ctx context.Context, units ...string) error
	Unmask(ctx context.Context, units ...string) error
	Restart(ctx context.Context, unit string) error
	Reload(ctx context.Context, unit string) error
	IsEnabled(ctx context.Context, unit string) (string, error)
	// BootID names the node's boot two ways: hostnamed's ID in hex (""
	// when hostnamed cannot tell) and "t" and when the node's systemd
	// started (always set). Two IDs of one form differ only across a boot
	// (boot.go).
	BootID(ctx context.Context) (id, start string, err error)
	Reboot(ctx context.Context) error
}

// OSUpdater stages OS image and kernel argument changes (rpm-ostree, bootc).
type OSUpdater interface {
	// Name names the updater ("rpm-ostree", "bootc").
	Name() string
	// Supports returns nil when the updater can stage c (its image when
	// not "", its kernel argument edit when not empty, its extensions and
	// kernel type when PackagesChanged); else why not. The update is then
	// refused in prepare.
	Supports(c OSChange) error
	// Stage stages the change, to take effect at the next boot, and says
	// what it staged. What is already staged, or already booted, is not
	// staged again, so a resumed update converges.
	Stage(ctx context.Context, c OSChange) (string, error)
	// Unstage removes a pending deployment (staged, or left by a boot that
	// fell back), so that the next boot does not bring it up; it says what
	// it removed, "" when nothing was pending.
	Unstage(ctx context.Context) (string, error)
	// Booted reads the booted deployment and whether it runs image.
	Booted(ctx context.Context, image string) (BootedOS, error)
	// Cleanup runs after a good boot into the update (rpm-ostree drops the
	// rollback deployment) and says what it did.
	Cleanup(ctx context.Context) (string, error)
	// Rollback makes the deployment the node ran before the update
	// (target) the one that boots next, through the updater's own
	// rollback (rpm-ostree rollback, bootc rollback), and says what it
	// did. When the deployment that boots next is target already, it does
	// nothing, so a resumed rollback does not swap back.
	Rollback(ctx context.Context, target OSTarget) (string, error)
}

// OSTarget is the OS a rollback goes back to: the previous config's image
// ("" when it named none) and kernel arguments.
type OSTarget struct {
	Image      string
	KernelArgs []string
}

// OSChange is an update's OS change: the image to stage and the kernel
// argument edit, relative to the booted deployment.
type OSChange struct {
	// Image is the image to stage; "" leaves the image alone.
	Image string
	// KernelArgs are the desired config's kernel arguments.
	KernelArgs []string
	// Removed and Added are the kernel arguments to delete and append, in
	// order, duplicates kept.
	Removed, Added []string
	// Extensions and KernelType are the desired config's. When
	// PackagesChanged, the updater layers the extensions' packages and
	// swaps the kernel as machine-config-daemon does; a rebase keeps a
	// kernel swap either way.
	Extensions      []string
	KernelType      string
	PackagesChanged bool
}

// BootedOS is the deployment the node booted.
type BootedOS struct {
	// Image is the booted image as the updater reports it.
	Image string
	// IsImage reports whether Image is the image asked about ("" matches).
	IsImage bool
	// KernelArgs are the booted deployment's kernel arguments; nil when the
	// updater cannot read them.
	KernelArgs []string
	// Packages are the booted deployment's layered packages and
	// RemovedPackages its removed base packages (rpm-ostree's requested
	// ones); Packages is nil when the updater cannot read them.
	Packages, RemovedPackages []string
}

// Drift watches the node's files and units for changes against the config
// the node runs.
type Drift interface {
	// Watch (re)starts watching the given config's files and units.
	Watch(ctx context.Context, cfg plan.Config) error
}

// Data is what a step sees: the update and its record, the ports it acts
// on, and the runner's reporter (the status, Events and metrics, which only
// the runner writes).
type Data interface {
	// Update is the update in progress: names, parsed configs, plan.
	Update() *Update
	Progress() *progress.Record
	// SaveProgress writes the progress record to the node now.
	SaveProgress() error
	// Ports are what the step acts on: the API objects, the node's files,
	// systemd, the OS updater, the policies and gates in force.
	Ports() *Ports
	// Clock is the time now, from the runner's clock.
	Clock() time.Time
	// Cuttable marks the part of a step that a shutdown may cut (the health
	// gate's checks): the context it returns is done, with cause
	// ErrStopped, a grace period after the daemon's shutdown began; release
	// ends it. A step whose whole Run may be cut says so with its Cut.
	Cuttable(ctx context.Context) (cut context.Context, release func())
	// RunSub runs list as a sub-list of the running step, with rec as its
	// record (engine.Runner.RunSub).
	RunSub(ctx context.Context, name string, rec engine.Record, list []Item) error
	Reporter
}

// Reporter is how a step shows itself; the runner writes what it stages.
type Reporter interface {
	// Report sets the running step's condition message (live progress),
	// with also (the conditions of the step's parts: the image-mode split
	// of the write), and writes the status at once. The runner logs a
	// failed write; a step may go on without it (best effort) or fail on
	// it. The rest of the status a step settles is its Outcome's Settles.
	Report(ctx context.Context, message string, also ...Condition) error
	// Event records an Event on the MachineConfigNode, and on the Node too
	// when onNode is set; warning marks failures. Warn records a Warning
	// Event and Note a Normal one, both on the Node and its
	// MachineConfigNode.
	Event(onNode, warning bool, reason, message string)
	Warn(reason, message string)
	Note(reason, message string)
	// Waiting tells the metrics which wait holds the update ("" once none
	// does, see Observer).
	Waiting(reason string)
}

// Update is one update of the node, filled in as the phases run.
type Update struct {
	Node string
	// NodeCurrent is the node's currentConfig annotation; CurrentName
	// differs from it after a lost progress record.
	NodeCurrent string
	CurrentName string
	DesiredName string
	Current     plan.Config
	Desired     plan.Config
	Diff        plan.Diff
	Action      plan.PostAction
	// SingleNode says the cluster has this node only (its Node's
	// controlPlaneTopology annotation is SingleReplica): no drain.
	SingleNode bool
	// Runtime is the node's container runtime (its Node's
	// containerRuntimeVersion): the default rules are its
	// (plan.Policy.ForRuntime).
	Runtime plan.Runtime

	// DesiredObject is the desired config as fetched, kept on the node
	// once the update is complete (SaveApplied).
	DesiredObject *mcfgv1.MachineConfig

	// RecordLost says the daemon goes on without an unreadable progress
	// record (status.Stager's RecordLost): an adoption lifts its cordon.
	RecordLost bool

	// adoption is what the adoption's steps share (adopt.go).
	adoption *adoption
	// steered is set while the holds gate keeps the daemon's steering
	// taint on the node (waits.go).
	steered bool
}

// The shapes of the update's lists (package engine), with what the steps
// see.
type (
	// Item is one entry of a list: a Step, Group, Gate or Commit.
	Item = engine.Item[Data]
	// Step is one step of the update.
	Step = engine.Step[Data]
	// Group is a primary condition and its steps.
	Group = engine.Group[Data]
	// Gate is a named wait that holds the step after it.
	Gate = engine.Gate[Data]
	// Commit is the point from which the update runs to its end.
	Commit = engine.Commit[Data]
	// Cut says a step may be cut short, and how it is given back.
	Cut = engine.Cut[Data]
	// Show is how a step shows in the status and the Events.
	Show = engine.Show
	// Outcome is what a finished step reports in its condition.
	Outcome = engine.Outcome
	// Settles is the status a step settles besides its own condition.
	Settles = engine.Settles
	// Condition is a condition as a step settles it.
	Condition = engine.Condition
	// StepError is an update failure in one step.
	StepError = engine.StepError
	// Recorder records Kubernetes Events about the node's update.
	Recorder = engine.Recorder
)
