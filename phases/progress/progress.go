// Package progress is the update's record on the node: which steps of which
// update are done, saved after every step so that a daemon started at any
// moment resumes at the first step not done.
package progress

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Version is the record's schema version. Version 2 groups what each
// step produced under that step (version 1 kept it in flags of the
// record, v1.go); a record of version 1 is migrated as it is read, one
// way: the release before reads no record of this one, so a DaemonSet
// rolled back mid-update fails its update, saying so, rather than misread
// it (docs/operations.md). From version 2 on, fields are only ever added, each
// one an older daemon may ignore safely: TestRecordStaysReadableByTheReleaseBefore.
const Version = 2

// FileName is the record's name in the daemon's state directory.
const FileName = "progress.json"

// Step is one finished step and what it reported.
type Step struct {
	Name    string `json:"name"`
	Skipped bool   `json:"skipped,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

// Record is the progress of one update, from Current to Desired: the steps
// done, and what each step produced that a later step, or the same step
// after a restart, reads.
type Record struct {
	Version int    `json:"version"`
	Current string `json:"current"`
	Desired string `json:"desired"`
	// RebootRequest, when set, makes this update a reboot on request: from
	// the node's config to itself, its post action a reboot; it says why
	// (the request's text, rebootrequest.go).
	RebootRequest string `json:"rebootRequest,omitempty"`
	Steps         []Step `json:"steps,omitempty"`
	// Inherited is what the updates this one replaced left it (Replacing).
	Inherited Inherited `json:"inherited,omitzero"`
	// Prepare, Cordon, Write and Reboot are what those steps produced;
	// Health is the health gate's record and its rollback's.
	Prepare Prepared `json:"prepare,omitzero"`
	Cordon  Cordon   `json:"cordon,omitzero"`
	Write   Written  `json:"write,omitzero"`
	Reboot  Rebooted `json:"reboot,omitzero"`
	Health  *Health  `json:"health,omitempty"`
}

// Inherited is what the updates an update replaced left it.
type Inherited struct {
	// Replaced is the unfinished update this one replaced before that one
	// had written its config: its writes are rolled back and its cordon
	// given back before this update starts (the give-back step).
	Replaced *Replaced `json:"replaced,omitempty"`
	// Owed is the post action of earlier updates written and replaced
	// before it ran (owed.go): this update runs it with its own.
	Owed *Owed `json:"owed,omitempty"`
	// EarlierKernelArgs are the kernel arguments of the configs of earlier
	// updates that were replaced before they finished, once their OS change
	// may have been staged: the booted deployment may still carry them (a
	// boot that fell back), so prepare removes those the desired config
	// lacks.
	EarlierKernelArgs []string `json:"earlierKernelArgs,omitempty"`
}

// Prepared is what prepare planned, kept so that a restart reloads it
// rather than asking again.
type Prepared struct {
	// OS is the OS change, checked against the booted deployment before
	// anything was written (after the reboot the OS has changed).
	OS *OSPlan `json:"os,omitempty"`
	// Action is the post action chosen: a restart keeps it rather than
	// asking a node disruption policy changed meanwhile (the node may be
	// drained, or not, for the one chosen).
	Action *ActionPlan `json:"action,omitempty"`
}

// Cordon is the node's cordon as the update holds it.
type Cordon struct {
	// ByUs is set once this daemon cordoned the node for the update (or
	// an update it replaced did), saved before the cordon request.
	ByUs bool `json:"byUs,omitempty"`
	// Own says the cordon (ByUs) is this update's own, taken by its cordon
	// step on an uncordoned node: this update's give-backs lift it, and
	// one that step has not recorded as done (a crash right after the
	// request, an uncordon the API server refused) is given back before
	// the update waits. Unset for a cordon of an earlier update (the one
	// this one replaced after its write, or one whose record was lost):
	// the node stays cordoned, also while the update waits and when it is
	// cut or fails, until its uncordon (the cordon's Holding says so).
	Own bool `json:"own,omitempty"`
}

// Written is what the write step produced.
type Written struct {
	// Started is set, and saved, before the write changes anything: from
	// then on the update may have written, and an update replacing it
	// first rolls its journal back.
	Started bool `json:"started,omitempty"`
	// BootID and BootStart are the boot of the write's last try, saved
	// with Started by an update that has a post action: a later boot
	// brought its files up, so an update replacing it owes that action no
	// more (Owed). BootStart is "" in a record migrated from one older
	// than that field.
	BootID    string `json:"bootID,omitempty"`
	BootStart string `json:"bootStart,omitempty"`
	// CreatedDirs are the folders the write created (parents first),
	// saved with the write's step: the health gate's rollback removes
	// them when empty, once the write's journal is gone.
	CreatedDirs []string `json:"createdDirs,omitempty"`
}

// Rebooted is a reboot the daemon asked for (the update's, or its
// rollback's): a different boot afterwards proves it happened.
type Rebooted struct {
	// FromBootID and FromBootStart are the boot the node was in when the
	// daemon asked for the reboot (phases/boot.go compares them).
	FromBootID    string `json:"fromBootID,omitempty"`
	FromBootStart string `json:"fromBootStart,omitempty"`
	// RequestedAt is when the daemon asked; the reboot's duration runs
	// from there to the node being back.
	RequestedAt time.Time `json:"requestedAt,omitzero"`
}

// Replaced is an update replaced before its write was done.
type Replaced struct {
	// Desired is its desired config, the name of its journal.
	Desired string `json:"desired"`
	// Cordoned says its cordon step was done; WriteStarted that its write
	// had begun.
	Cordoned     bool `json:"cordoned,omitempty"`
	WriteStarted bool `json:"writeStarted,omitempty"`
	// CordonOwn says the cordon the update held was its own (its record's
	// CordonOwn): the give-back lifts it. Another (an earlier update's, or
	// a record older than the field) stays with the update that replaces
	// it, until that update's uncordon.
	CordonOwn bool `json:"cordonOwn,omitempty"`
}

// OSPlan is the planned OS change of an update.
type OSPlan struct {
	// FromKernelArgs are the kernel arguments of the config updated from.
	FromKernelArgs    []string `json:"fromKernelArgs,omitempty"`
	ImageChanged      bool     `json:"imageChanged,omitempty"`
	KernelArgsRemoved []string `json:"kernelArgsRemoved,omitempty"`
	KernelArgsAdded   []string `json:"kernelArgsAdded,omitempty"`
	ExtensionsChanged bool     `json:"extensionsChanged,omitempty"`
	KernelTypeChanged bool     `json:"kernelTypeChanged,omitempty"`
}

// ActionPlan is the planned post action of an update.
type ActionPlan struct {
	Reboot      bool     `json:"reboot,omitempty"`
	Actions     []Action `json:"actions,omitempty"`
	Drain       bool     `json:"drain,omitempty"`
	DrainReason string   `json:"drainReason,omitempty"`
}

// Action is one node disruption action ("Restart", "crio.service").
type Action struct {
	Type string `json:"type"`
	Unit string `json:"unit,omitempty"`
}

// Replacing starts the record of an update that replaces old, unfinished,
// from the config the node may now run (from): old's desired config once its
// write was done, else its current one. The kernel arguments old may have
// left on the booted deployment are carried over: those it added, and once
// its write was done, those of the config it came from. So is the post
// action old, or those it replaced, wrote files for and did not run (Owed).
func Replacing(old *Record, from, desired string) *Record {
	n := New(from, desired)
	n.Cordon.ByUs = old.Cordon.ByUs
	n.Inherited.Owed = owedAfter(old)
	switch {
	case old.Inherited.Replaced != nil && !old.Done(StepGiveBack):
		// old was replaced in turn before it did anything: what its own
		// predecessor left is still to give back.
		n.Inherited.Replaced = old.Inherited.Replaced
	case old.Done(StepDetect) && !old.Done(StepWrite):
		// Begun, not written: what it holds is given back first. One
		// not yet begun (its adoption failed, say) holds nothing.
		n.Inherited.Replaced = &Replaced{Desired: old.Desired, Cordoned: old.Done(StepCordon), WriteStarted: old.Write.Started,
			CordonOwn: old.Cordon.Own}
	}
	n.Inherited.EarlierKernelArgs = append([]string(nil), old.Inherited.EarlierKernelArgs...)
	var maybe []string
	if old.Prepare.OS != nil {
		// What old added may be staged, even booted, before its write was
		// recorded (a crash mid-write); the config it came from is booted
		// or pending once it was.
		maybe = old.Prepare.OS.KernelArgsAdded
		if old.Done(StepWrite) {
			maybe = append(append([]string(nil), maybe...), old.Prepare.OS.FromKernelArgs...)
		}
	}
	for _, k := range maybe {
		if !slices.Contains(n.Inherited.EarlierKernelArgs, k) {
			n.Inherited.EarlierKernelArgs = append(n.Inherited.EarlierKernelArgs, k)
		}
	}
	return n
}

// New starts the record of an update.
func New(current, desired string) *Record {
	return &Record{Version: Version, Current: current, Desired: desired}
}

// Done reports whether the named step is done.
func (r *Record) Done(name string) bool { return r.Step(name) != nil }

// Step returns the named finished step, or nil.
func (r *Record) Step(name string) *Step {
	for i := range r.Steps {
		if r.Steps[i].Name == name {
			return &r.Steps[i]
		}
	}
	return nil
}

// MarkDone records a finished step.
func (r *Record) MarkDone(s Step) {
	if old := r.Step(s.Name); old != nil {
		*old = s
		return
	}
	r.Steps = append(r.Steps, s)
}

// Forget marks the named step as not done, so that it runs again.
func (r *Record) Forget(name string) {
	for i := range r.Steps {
		if r.Steps[i].Name == name {
			r.Steps = append(r.Steps[:i], r.Steps[i+1:]...)
			return
		}
	}
}

// Marshal encodes the record.
func (r *Record) Marshal() ([]byte, error) {
	return json.MarshalIndent(r, "", "  ")
}

// Unmarshal decodes a record, migrating one of version 1 (v1.go) and
// refusing other schema versions.
func Unmarshal(data []byte) (*Record, error) {
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("decoding progress record: %w", err)
	}
	switch head.Version {
	case 1:
		return migrateV1(data)
	case Version:
	default:
		return nil, fmt.Errorf("progress record has version %d, this daemon reads versions 1 and %d", head.Version, Version)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding progress record: %w", err)
	}
	return &r, nil
}
