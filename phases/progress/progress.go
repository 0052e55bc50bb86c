// Package progress is the update's record on the node: which steps of which
// update are done, saved after every step so that a daemon started at any
// moment resumes at the first step not done.
package progress

import (
	"encoding/json"
	"fmt"
)

// Version is the record's schema version; a record of another version is
// refused rather than misread.
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
	// RebootFromBootID is the boot ID the node had when the daemon asked for
	// the reboot; a different boot ID afterwards proves the reboot happened.
	RebootFromBootID string `json:"rebootFromBootID,omitempty"`
	// OS is the OS change prepare planned, checked against the booted
	// deployment before anything was written; a restart reloads it rather
	// than asking the OS again (after the reboot the OS has changed).
	OS *OSPlan `json:"os,omitempty"`
}

// OSPlan is the planned OS change of an update.
type OSPlan struct {
	ImageChanged      bool     `json:"imageChanged,omitempty"`
	KernelArgsRemoved []string `json:"kernelArgsRemoved,omitempty"`
	KernelArgsAdded   []string `json:"kernelArgsAdded,omitempty"`
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

// Finish records a finished step.
func (r *Record) Finish(s Step) {
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
