package phases

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// splitWrite makes the write phase also report the split of
// AppliedFilesAndOS that upstream reports behind its
// ImageModeStatusReporting feature gate (--image-mode-status, List's
// ImageModeStatus): AppliedFiles (files, units, SSH keys),
// ImagePulledFromRegistry (the OS image pulled) and AppliedOSImage (the OS
// image and kernel arguments staged for the next boot). AppliedFilesAndOS
// is still reported, for the consoles and printer columns that read it.
func splitWrite(p Step) Step {
	run, starting := p.Run, p.Show.Starting
	p.Run = func(ctx context.Context, d Data) (Outcome, error) {
		sd := splitData{Data: d, started: map[string]bool{}}
		// Written at once, as the runner writes a phase's start (the
		// phase's own message stays the same).
		_ = d.Report(ctx, starting, sd.start(status.AppliedFiles, "Applying the files, units and SSH keys of "+d.Update().DesiredName))
		out, err := run(ctx, sd)
		if err != nil {
			// The conditions the write had started show the failure, as
			// the runner shows it in the phase's own.
			for _, t := range status.ImageMode {
				if sd.started[t] {
					out.Settles = out.Settles.Also(condition(t, metav1.ConditionUnknown, status.Reason(t), "Error: "+err.Error()))
				}
			}
			return out, err
		}
		out.Settles = out.Settles.Also(splitDone(d)...)
		return out, nil
	}
	// After a restart the done write shows as it did (the status as last
	// written may predate the end of the phase).
	reload := p.Reload
	p.Reload = func(ctx context.Context, d Data) (Settles, error) {
		var settles Settles
		if reload != nil {
			var err error
			if settles, err = reload(ctx, d); err != nil {
				return settles, err
			}
		}
		return settles.Also(splitDone(d)...), nil
	}
	return p
}

// splitDone is the split conditions of a finished write, from the plan
// alone, so a reload settles the same.
func splitDone(d Data) []Condition {
	u := d.Update()
	out := []Condition{condition(status.AppliedFiles, metav1.ConditionTrue, status.Reason(status.AppliedFiles), filesMessage(u.Diff))}
	notRequired := func(t, msg string) Condition {
		return condition(t, metav1.ConditionFalse, status.ReasonNotRequired, msg)
	}
	switch {
	case d.Ports().OS != nil && u.Diff.OSImageChanged:
		out = append(out, condition(status.ImagePulledFromRegistry, metav1.ConditionTrue, status.Reason(status.ImagePulledFromRegistry),
			"Pulled OS image "+u.Desired.OSImageURL+" with "+d.Ports().OS.Name()))
	case u.Diff.OSNotManaged:
		out = append(out, notRequired(status.ImagePulledFromRegistry, NotManagedMessage))
	default:
		out = append(out, notRequired(status.ImagePulledFromRegistry, "The update changes no OS image"))
	}
	switch {
	case d.Ports().OS != nil && u.Diff.OSChanged():
		out = append(out, condition(status.AppliedOSImage, metav1.ConditionTrue, status.Reason(status.AppliedOSImage),
			osMessage(u)+" staged with "+d.Ports().OS.Name()+" for the next boot"))
	case u.Diff.OSNotManaged:
		out = append(out, notRequired(status.AppliedOSImage, NotManagedMessage))
	default:
		out = append(out, notRequired(status.AppliedOSImage, "The update changes no OS image or kernel arguments"))
	}
	return out
}

func filesMessage(diff plan.Diff) string {
	parts := []string{plan.Plural(len(diff.ChangedFiles), "file")}
	if n := len(diff.RemovedFiles); n > 0 {
		parts = append(parts, plan.Plural(n, "file")+" removed")
	}
	if n := len(diff.ChangedUnits) + len(diff.RemovedUnits); n > 0 {
		parts = append(parts, plan.Plural(n, "unit"))
	}
	if diff.SSHKeysChanged() {
		parts = append(parts, "SSH keys")
	}
	if diff.PasswordHashChanged {
		parts = append(parts, "password hash")
	}
	return "Applied " + strings.Join(parts, ", ")
}

// osMessage names the update's OS change.
func osMessage(u *Update) string {
	var parts []string
	if u.Diff.OSImageChanged {
		parts = append(parts, "OS image "+u.Desired.OSImageURL)
	}
	if n := len(u.Diff.KernelArgsAdded) + len(u.Diff.KernelArgsRemoved); n > 0 {
		parts = append(parts, plan.Plural(n, "kernel argument change"))
	}
	if u.Diff.ExtensionsChanged {
		parts = append(parts, "extensions ["+strings.Join(u.Desired.Extensions, ", ")+"]")
	}
	if u.Diff.KernelTypeChanged {
		parts = append(parts, "kernel type "+plan.CanonicalKernelType(u.Desired.KernelType))
	}
	return strings.Join(parts, " and ")
}

// splitData is the write phase's view with the split conditions: the OS
// updater it sees reports the files done and the OS change started, and
// writes that, as its staging begins.
type splitData struct {
	Data
	// started holds the split conditions set in progress (Unknown).
	started map[string]bool
}

// start marks t started and returns it in progress, for a Report.
func (s splitData) start(t, msg string) Condition {
	s.started[t] = true
	return condition(t, metav1.ConditionUnknown, status.Reason(t), msg)
}

// Ports are the write's, with its OS updater reporting the split.
func (s splitData) Ports() *Ports {
	p := *s.Data.Ports()
	if p.OS != nil {
		p.OS = splitOS{OSUpdater: p.OS, d: s}
	}
	return &p
}

type splitOS struct {
	OSUpdater
	d splitData
}

func (o splitOS) Stage(ctx context.Context, c OSChange) (string, error) {
	u := o.d.Update()
	also := []Condition{condition(status.AppliedFiles, metav1.ConditionTrue, status.Reason(status.AppliedFiles), filesMessage(u.Diff))}
	o.d.started[status.AppliedFiles] = false
	if c.Image != "" {
		also = append(also, o.d.start(status.ImagePulledFromRegistry, "Pulling OS image "+c.Image+" with "+o.Name()))
	}
	also = append(also, o.d.start(status.AppliedOSImage, "Staging "+osMessage(u)+" with "+o.Name()))
	// A status write that fails is not the update's failure: the next
	// write brings the status up to date.
	_ = o.d.Report(ctx, "Staging the OS update with "+o.Name(), also...)
	return o.OSUpdater.Stage(ctx, c)
}
