// Package plan turns rendered MachineConfigs into what the daemon applies:
// it parses and validates their Ignition configs, diffs the current and the
// desired one, refuses what cannot be applied in place, and chooses the post
// action. Everything here is pure: no I/O, no clocks.
package plan

import "io/fs"

// Config is the part of one rendered MachineConfig that the daemon applies,
// normalized from Ignition 3.x.
type Config struct {
	// Name is the MachineConfig's name (used in errors and messages).
	Name string
	// Files by absolute path.
	Files map[string]File
	// Units by unit name (e.g. "crio.service").
	Units map[string]Unit
	// SSHKeys holds, by user name, the authorized keys the config gives
	// each user (core, or any user the node already has); a user without
	// keys has no entry.
	SSHKeys map[string]UserKeys
	// PasswordHash is user core's password hash, "" when the config sets
	// none (then "*", no password, is set, as machine-config-daemon does).
	PasswordHash string

	OSImageURL      string
	KernelArguments []string
	Extensions      []string
	KernelType      string
	FIPS            bool

	// Unreconcilable holds, by field path (e.g. "spec.config.storage.disks"),
	// a canonical encoding of each section that cannot be applied in place.
	// Two configs whose entries differ cannot be updated between in place.
	Unreconcilable map[string]string
}

// File is one file of the config, with its contents decoded.
type File struct {
	// Field is the file's entry in the MachineConfig, for errors
	// ("spec.config.storage.files[3]").
	Field    string
	Path     string
	Contents []byte
	// Mode holds the permission bits (at most 07777); 0644 when the config
	// gives none.
	Mode  fs.FileMode
	User  Owner
	Group Owner
	// Digest, when set, stands for the contents (Contents is then nil) in
	// a config kept only to check the node against (see Config.Digested).
	Digest *Digest
}

// Owner names a user or group by ID or by name; the zero value is root.
type Owner struct {
	ID   *int
	Name string
}

// UserKeys is one user's authorized keys, written to ~/.ssh/authorized_keys
// (the home from the node's /etc/passwd), as Ignition writes them on a
// system without authorized_keys.d.
type UserKeys struct {
	// User is the user's name, looked up in the node's account files.
	User string
	// Field is the user's keys in the MachineConfig, for errors
	// ("spec.config.passwd.users[1].sshAuthorizedKeys").
	Field string
	// Keys in config order. In a Diff, none means the desired config has
	// no keys for the user any more: its key file is removed.
	Keys []string
}

// Unit is one systemd unit of the config.
type Unit struct {
	// Field is the unit's entry in the MachineConfig, for errors
	// ("spec.config.systemd.units[2]").
	Field string
	Name  string
	// Contents is nil when the config only enables, disables or masks the unit.
	Contents *string
	// Enabled is nil when the config leaves enablement alone.
	Enabled *bool
	Mask    bool
	// Dropins by drop-in file name ("10-foo.conf").
	Dropins map[string]string
}

// Diff is what changes between the current and the desired config.
type Diff struct {
	// Files written or rewritten (contents, mode or owner differ), sorted by path.
	ChangedFiles []File
	// Paths of files the desired config no longer has, sorted.
	RemovedFiles []string
	// Units written or changed (contents, drop-ins, enablement, mask), sorted by name.
	ChangedUnits []Unit
	// Units the desired config no longer has (with their old definition), sorted.
	RemovedUnits []Unit
	// SSHKeys are the users whose authorized keys change, sorted by name,
	// with their desired keys (see UserKeys); a removed user's Field is
	// its entry in the current config.
	SSHKeys []UserKeys
	// PasswordHashChanged says user core's password hash changes.
	PasswordHashChanged bool
	OSImageChanged      bool
	// Kernel arguments to remove and to add, in config order.
	KernelArgsRemoved []string
	KernelArgsAdded   []string
	ExtensionsChanged bool
	KernelTypeChanged bool
	// OSNotManaged says the node has no OS updater: its OS fields are
	// left as they are (the OS part of the diff is empty), as
	// machine-config-daemon leaves them on a node that is not CoreOS.
	OSNotManaged bool
}

// Empty reports whether the diff changes nothing.
func (d Diff) Empty() bool {
	return len(d.ChangedFiles) == 0 && len(d.RemovedFiles) == 0 &&
		len(d.ChangedUnits) == 0 && len(d.RemovedUnits) == 0 &&
		len(d.SSHKeys) == 0 && !d.PasswordHashChanged && !d.OSImageChanged &&
		len(d.KernelArgsRemoved) == 0 && len(d.KernelArgsAdded) == 0 &&
		!d.ExtensionsChanged && !d.KernelTypeChanged
}

// SSHKeysChanged reports whether any user's authorized keys change.
func (d Diff) SSHKeysChanged() bool { return len(d.SSHKeys) > 0 }

// OSChanged reports whether the diff needs an OS updater (image, kernel
// arguments, extensions or kernel type).
func (d Diff) OSChanged() bool {
	return d.OSImageChanged || len(d.KernelArgsRemoved) > 0 || len(d.KernelArgsAdded) > 0 ||
		d.ExtensionsChanged || d.KernelTypeChanged
}

// ActionKind is what happens after the changes are written. Kinds are
// ordered: a bigger kind covers the smaller ones.
type ActionKind int

const (
	ActionNone ActionKind = iota
	ActionDaemonReload
	ActionReloadUnit
	ActionRestartUnit
	ActionReloadCRIO
	ActionReboot
)

func (k ActionKind) String() string {
	switch k {
	case ActionNone:
		return "None"
	case ActionDaemonReload:
		return "DaemonReload"
	case ActionReloadUnit:
		return "ReloadUnit"
	case ActionRestartUnit:
		return "RestartUnit"
	case ActionReloadCRIO:
		return "ReloadCRIO"
	case ActionReboot:
		return "Reboot"
	}
	return "Unknown"
}

// PostAction is the chosen post action and why.
type PostAction struct {
	// Kind sums the actions up: Reboot, else ReloadCRIO when an action
	// reloads or restarts CRI-O (or is registries.conf's Special), else the
	// biggest of the rest; None when nothing runs.
	Kind ActionKind
	// Actions run after the writes, in order, without duplicates and
	// without None; empty when Kind is Reboot (the reboot covers them).
	Actions []Action
	// Drain says the node is cordoned and drained before the writes;
	// DrainReason says why ("the node reboots", the registry entry that
	// makes a registries.conf change unsafe).
	Drain       bool
	DrainReason string
	// Reasons says, per change, its actions and the rule that chose them
	// ("/etc/foo: Reboot [no rule matches]").
	Reasons []string
}

// NeedsDrain reports whether the node must be cordoned and drained first.
func (a PostAction) NeedsDrain() bool { return a.Drain }

// SingleNodeNoDrain is why a single-node cluster's update is not drained.
const SingleNodeNoDrain = "single-node cluster (controlPlaneTopology SingleReplica): nowhere to move the pods"

// OnSingleNode is a as a single-node cluster runs it: as upstream's daemon
// (drainRequired), never cordoned or drained, since there is no other node
// for the pods (a PodDisruptionBudget would hold the drain for good); the
// post action itself is unchanged. DrainReason then says why not.
func (a PostAction) OnSingleNode() PostAction {
	if a.Drain {
		a.Drain, a.DrainReason = false, SingleNodeNoDrain
	}
	return a
}
