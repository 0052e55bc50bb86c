package status

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The split of AppliedFilesAndOS that upstream reports behind its
// ImageModeStatusReporting feature gate; the daemon reports them with
// --image-mode-status, next to AppliedFilesAndOS (docs/status.md).
const (
	AppliedFiles            = "AppliedFiles"
	ImagePulledFromRegistry = "ImagePulledFromRegistry"
	AppliedOSImage          = "AppliedOSImage"
)

// ImageMode lists the split conditions in the order shown, right after
// AppliedFilesAndOS: files first, then the OS image pulled and staged.
var ImageMode = []string{AppliedFiles, ImagePulledFromRegistry, AppliedOSImage}

// WithImageMode stages the split conditions' presence (see the package's
// WithImageMode) and reports whether anything changed.
func (s *Stager) WithImageMode(on bool) bool {
	if WithImageMode(&s.st.Conditions, on, metav1.NewTime(s.now().Truncate(time.Second))) {
		s.dirty = true
		return true
	}
	return false
}

// shownOrder is Order with the split conditions after AppliedFilesAndOS.
func shownOrder() []string {
	order := Order()
	return slices.Insert(order, slices.Index(order, AppliedFilesAndOS)+1, ImageMode...)
}

// WithImageMode adds the split conditions missing from conds, at
// False/NotYetOccurred, when on, and removes them when off (a daemon
// restarted without the flag). It reports whether anything changed.
func WithImageMode(conds *[]metav1.Condition, on bool, now metav1.Time) bool {
	changed := false
	for _, t := range ImageMode {
		present := Find(*conds, t) != nil
		switch {
		case on && !present:
			Set(conds, reset(t, now))
			changed = true
		case !on && present:
			*conds = slices.DeleteFunc(*conds, func(c metav1.Condition) bool { return c.Type == t })
			changed = true
		}
	}
	return changed
}

// presentImageMode returns the split conditions conds holds.
func presentImageMode(conds []metav1.Condition) []string {
	var out []string
	for _, t := range ImageMode {
		if Find(conds, t) != nil {
			out = append(out, t)
		}
	}
	return out
}
