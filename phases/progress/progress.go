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

// Version is the record's schema version; a record of another version is
// refused rather than misread. Fields are only ever added, each one an
// older daemon may ignore safely, so that the release before reads the
// records of this one (a DaemonSet rolled back mid-update):
// TestRecordStaysReadableByTheReleaseBefore.
const Version = 1

// FileName is the record's name in the daemon's state directory.
const FileName = "progress.json"

// Step is one finished step and what it reported.
type Step struct {
	Name    string `json:"name"`
	Skipped bool   `json:"skipped,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

// Record is the progress of one update, from Current to Desired.
type Record struct {
	Version int    `json:"version"`
	Current string `json:"current"`
	Desired string `json:"desired"`
	Steps   []Step `json:"steps,omitempty"`
	// CordonedByUs is true once this daemon cordoned the node for the update.
	CordonedByUs bool `json:"cordonedByUs,omitempty"`
	// CordonOwn says the cordon (CordonedByUs) is this update's own,
	// taken by its cordon step on an uncordoned node: this update's
	// give-backs lift it, and one that step has not recorded as done (a
	// crash right after the request, an uncordon the API server refused)
	// is given back before the update waits. Unset for a cordon of an
	// earlier update (the one this one replaced after its write, or one
	// whose record was lost), and in a record older than the field: the
	// node stays cordoned, also while the update waits and when it is cut
	// or fails, until its uncordon (the cordon's Holding says so).
	CordonOwn bool `json:"cordonOwn,omitempty"`
	// WriteStarted is set, and saved, before the write step changes
	// anything: from then on the update may have written, and an update
	// replacing it first rolls its journal back.
	WriteStarted bool `json:"writeStarted,omitempty"`
	// WriteBootID is the boot of the write's last try, saved with
	// WriteStarted by an update that has a post action: a later boot
	// brought its files up, so an update replacing it owes that action no
	// more (Owed).
	WriteBootID string `json:"writeBootID,omitempty"`
	// WriteBootStart is that boot's other name: when the node's systemd
	// started. With it two boots always share a form to compare
	// (phases/boot.go); "" in a record older than the field.
	WriteBootStart string `json:"writeBootStart,omitempty"`
	// CreatedDirs are the folders the write created (parents first),
	// saved with the write's step: the health gate's rollback removes
	// them when empty, once the write's journal is gone.
	CreatedDirs []string `json:"createdDirs,omitempty"`
	// RebootFromBootID is the boot ID the node had when the daemon asked for
	// the reboot; a different boot ID afterwards proves the reboot happened.
	RebootFromBootID string `json:"rebootFromBootID,omitempty"`
	// RebootFromBootStart is that boot's start, as WriteBootStart.
	RebootFromBootStart string `json:"rebootFromBootStart,omitempty"`
	// RebootRequestedAt is when the daemon asked for the reboot; the
	// reboot's duration runs from there to the node being back.
	RebootRequestedAt time.Time `json:"rebootRequestedAt,omitzero"`
	// OS is the OS change prepare planned, checked against the booted
	// deployment before anything was written; a restart reloads it rather
	// than asking the OS again (after the reboot the OS has changed).
	OS *OSPlan `json:"os,omitempty"`
	// Action is the post action prepare chose: a restart keeps it rather
	// than asking a node disruption policy changed meanwhile (the node may
	// be drained, or not, for the one chosen).
	Action *ActionPlan `json:"action,omitempty"`
	// EarlierKernelArgs are the kernel arguments of the configs of earlier
	// updates that were replaced before they finished, once their OS change
	// may have been staged: the booted deployment may still carry them (a
	// boot that fell back), so prepare removes those the desired config
	// lacks.
	EarlierKernelArgs []string `json:"earlierKernelArgs,omitempty"`
	// Health is the post-update health gate's record: its failure and
	// the rollback's steps (health.go).
	Health *Health `json:"health,omitempty"`
	// RebootRequest, when set, makes this update a reboot on request: from
	// the node's config to itself, its post action a reboot; it says why
	// (the request's text, rebootrequest.go).
	RebootRequest string `json:"rebootRequest,omitempty"`
	// Replaced is the unfinished update this one replaced before that one
	// had written its config: its writes are rolled back and its cordon
	// given back before this update starts (the give-back step).
	Replaced *Replaced `json:"replaced,omitempty"`
	// Owed is the post action of earlier updates written and replaced
	// before it ran (owed.go): this update runs it with its own.
	Owed *Owed `json:"owed,omitempty"`
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
	n.CordonedByUs = old.CordonedByUs
	n.Owed = owedAfter(old)
	switch {
	case old.Replaced != nil && !old.Done(StepGiveBack):
		// old was replaced in turn before it did anything: what its own
		// predecessor left is still to give back.
		n.Replaced = old.Replaced
	case old.Done(StepDetect) && !old.Done(StepWrite):
		// Begun, not written: what it holds is given back first. One
		// not yet begun (its adoption failed, say) holds nothing.
		n.Replaced = &Replaced{Desired: old.Desired, Cordoned: old.Done(StepCordon), WriteStarted: old.WriteStarted,
			CordonOwn: old.CordonOwn}
	}
	n.EarlierKernelArgs = append([]string(nil), old.EarlierKernelArgs...)
	var maybe []string
	if old.OS != nil {
		// What old added may be staged, even booted, before its write was
		// recorded (a crash mid-write); the config it came from is booted
		// or pending once it was.
		maybe = old.OS.KernelArgsAdded
		if old.Done(StepWrite) {
			maybe = append(append([]string(nil), maybe...), old.OS.FromKernelArgs...)
		}
	}
	for _, k := range maybe {
		if !slices.Contains(n.EarlierKernelArgs, k) {
			n.EarlierKernelArgs = append(n.EarlierKernelArgs, k)
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

// Unmarshal decodes a record, refusing other schema versions.
func Unmarshal(data []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding progress record: %w", err)
	}
	if r.Version != Version {
		return nil, fmt.Errorf("progress record has version %d, this daemon reads version %d", r.Version, Version)
	}
	return &r, nil
}
