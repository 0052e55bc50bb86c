// Package eta predicts when a node's update ends, from the durations of
// the node's own past updates of the same kind (a reboot, a reload or
// restart of services, nothing), phase by phase, kept on the node in a
// small bounded file beside the progress record. Everything here is pure:
// the daemon's observer (daemon/etaobserver.go) feeds it the phases'
// durations and writes its prediction into the MachineConfigNode status.
package eta

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// FileName is the history's name in the daemon's state directory.
const FileName = "eta.json"

// Version is the file's schema version; a file of another version is
// started afresh (it is a forecast's input, never the truth of an update).
const Version = 1

// MaxSamples is how many past updates of each kind are kept: the newest
// ones, so that a node whose drains grew longer soon predicts them so.
const MaxSamples = 5

// The kinds of update, by post action (status.updateETA.postAction).
const (
	KindReboot = "Reboot"
	KindReload = "Reload"
	KindNone   = "None"
)

// KindOf returns the kind of an update whose post action prepare chose
// (the record's Action); "" while it is not chosen yet.
func KindOf(a *progress.ActionPlan) string {
	switch {
	case a == nil:
		return ""
	case a.Reboot:
		return KindReboot
	case len(a.Actions) > 0 || a.Drain:
		return KindReload
	}
	return KindNone
}

// Sample is one past update: how long each phase that ran took, in
// seconds (a reboot's spans the boot, as its Event says).
type Sample struct {
	Phases map[string]float64 `json:"phases"`
}

// Run is the update under way: what it has measured so far. It is saved
// before the reboot, so that the update measured across it becomes a
// sample.
type Run struct {
	Desired string             `json:"desired"`
	Started time.Time          `json:"started"`
	Phases  map[string]float64 `json:"phases,omitempty"`
	// Whole says the run was measured from its first step: only then is
	// it a sample (a daemon restarted mid-update lost the phases before).
	Whole bool `json:"whole,omitempty"`
}

// History is the file: the samples by kind and the run under way.
type History struct {
	Version int                 `json:"version"`
	Samples map[string][]Sample `json:"samples,omitempty"`
	Run     *Run                `json:"run,omitempty"`
}

// Decode reads a history; one it cannot read, or of another version, is
// an empty history and the error says why (the caller logs it).
func Decode(data []byte) (History, error) {
	var h History
	if err := json.Unmarshal(data, &h); err != nil {
		return History{Version: Version}, fmt.Errorf("reading %s: %w", FileName, err)
	}
	if h.Version != Version {
		return History{Version: Version}, fmt.Errorf("reading %s: version %d, want %d", FileName, h.Version, Version)
	}
	return h, nil
}

// Encode returns the file's bytes.
func (h History) Encode() []byte {
	h.Version = Version
	data, _ := json.Marshal(h) // maps of strings and floats: never fails
	return data
}

// Add keeps s as the newest sample of kind, dropping the oldest beyond
// MaxSamples.
func (h *History) Add(kind string, s Sample) {
	if h.Samples == nil {
		h.Samples = map[string][]Sample{}
	}
	list := append(h.Samples[kind], s)
	if len(list) > MaxSamples {
		list = slices.Clone(list[len(list)-MaxSamples:])
	}
	h.Samples[kind] = list
}

// Expected is how long phase is expected to take in an update of kind,
// and how many samples say so (0: the default). It is the median of the
// samples, a phase a sample did not run counting as 0 s: one slow drain
// does not move it much, and a phase skipped by every update of the kind
// costs nothing.
func (h History) Expected(kind, phase string) (time.Duration, int) {
	samples := h.Samples[kind]
	if len(samples) == 0 {
		return defaultFor(kind, phase), 0
	}
	xs := make([]float64, 0, len(samples))
	for _, s := range samples {
		xs = append(xs, s.Phases[phase])
	}
	return seconds(median(xs)), len(samples)
}

// Remaining is how long the phases of left take, in an update of kind,
// and how many samples say so.
func (h History) Remaining(kind string, left []string) (time.Duration, int) {
	var total time.Duration
	n := 0
	for _, p := range left {
		d, k := h.Expected(kind, p)
		total += d
		n = k
	}
	return total, n
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// KindOfPostAction is KindOf for a post action as prepare chooses it
// (`nodeconfd plan` has no record).
func KindOfPostAction(a plan.PostAction) string {
	return KindOf(&progress.ActionPlan{Reboot: a.Kind == plan.ActionReboot, Drain: a.Drain,
		Actions: make([]progress.Action, len(a.Actions))})
}
