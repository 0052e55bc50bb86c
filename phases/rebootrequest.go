package phases

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// A reboot on request (kured's job, issue 30) is an update from the
// node's config to itself whose post action is a reboot: the daemon starts
// one when the node's reboot request is granted (record.RebootRequest says
// why), and the list runs as for any update that reboots: the waits,
// cordon, drain, nothing to write, reboot, health gate without a rollback
// (there is no other config to go back to), uncordon; then this step clears
// the request.

// RebootRequests is where the node's reboot requests come from (package
// daemon: the Node annotation, the reboot-required sentinel file).
type RebootRequests interface {
	// Clear removes the request a reboot asked for at rebootAt answered:
	// the annotation while it still says why (a request made anew stays),
	// and the sentinel file when it was written before rebootAt.
	Clear(ctx context.Context, why string, rebootAt time.Time) error
}

// maxRequestText caps a request's text in the status: an administrator's
// annotation may be long, and a condition's message is capped by the API.
const maxRequestText = 256

// rebootRequestText is how the status quotes a request: control
// characters blanked, cut at maxRequestText.
func rebootRequestText(why string) string {
	why = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, why)
	return "reboot requested (" + Truncate(strings.ToValidUTF8(why, ""), maxRequestText) + ")"
}

// ClearRebootRequest answers the node's reboot request once the node has
// rebooted, passed the health gate and been uncordoned.
func ClearRebootRequest() Step {
	return Step{
		Name: progress.StepClearRebootRequest, Show: Show{Quick: true},
		Needed: func(d Data) (bool, string) {
			if d.Progress().RebootRequest == "" {
				return false, "No reboot was requested"
			}
			return true, ""
		},
		Run: func(ctx context.Context, d Data) (Outcome, error) {
			rec := d.Progress()
			if r := d.Ports().RebootRequests; r != nil {
				if err := r.Clear(ctx, rec.RebootRequest, rec.Reboot.RequestedAt); err != nil {
					return Outcome{}, fmt.Errorf("clearing the node's reboot request: %w", err)
				}
			}
			return Outcome{Message: "Answered the " + rebootRequestText(rec.RebootRequest)}, nil
		},
	}
}
