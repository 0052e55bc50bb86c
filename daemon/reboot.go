package daemon

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// Reboots on request (issue 30, kured's job): a node asks for a reboot by
// its Node's RebootRequested annotation, which an administrator sets or
// the daemon sets itself when it finds the reboot-required sentinel file;
// nodeconfd controller grants it when the pool has room; the daemon then
// runs the update list from the node's config to itself with a reboot as
// its post action (phases/rebootrequest.go), and the list's last steps
// clear the request.

// DefaultRebootSentinel is where Debian's and Ubuntu's package tools say
// a reboot is needed (/var/run/reboot-required, /var/run being /run).
const DefaultRebootSentinel = "/run/reboot-required"

// DefaultRebootCheckInterval is how often an idle daemon looks for the
// sentinel: a stat of one file.
const DefaultRebootCheckInterval = time.Minute

// Sentinels reads and removes the sentinel file (hostfs.FS).
type Sentinels interface {
	Sentinel(path string) (time.Time, bool, error)
	RemoveSentinel(path string, before time.Time) error
}

// RebootRequests clears answered requests (phases.RebootRequests): the
// sentinel file written before the reboot, then the annotation.
type RebootRequests struct {
	API       *kube.Client
	Sentinels Sentinels
	// Path is the sentinel's; "" when the daemon watches none.
	Path string
}

// Clear removes the request a reboot asked for at rebootAt answered.
func (r RebootRequests) Clear(ctx context.Context, why string, rebootAt time.Time) error {
	if r.Path != "" {
		if err := r.Sentinels.RemoveSentinel(r.Path, rebootAt); err != nil {
			return err
		}
	}
	return r.API.ClearRebootRequest(ctx, why)
}

// grantedReboot returns the record of the reboot the node was granted,
// nil when it was not.
func (d *Daemon) grantedReboot(current string) *progress.Record {
	why, granted := kube.RebootRequest(d.node.Annotations)
	if !granted {
		return nil
	}
	d.Log.Info("Reboot request granted; rebooting the node through the update's steps", zap.String("node", d.node.Name),
		zap.String("config", current), zap.String("request", why))
	rec := progress.New(current, current)
	rec.RebootRequest = why
	return rec
}

// idleDelay is when an idle daemon looks again without an event: for the
// sentinel, when it watches one.
func (d *Daemon) idleDelay() time.Duration {
	if d.RebootSentinel == "" {
		return 0
	}
	if d.RebootCheckInterval > 0 {
		return d.RebootCheckInterval
	}
	return DefaultRebootCheckInterval
}

// checkSentinel asks for a reboot when the sentinel file is there and the
// node has no request yet. A failure is logged; the next check tries again.
func (d *Daemon) checkSentinel(ctx context.Context) {
	if d.RebootSentinel == "" || d.Sentinels == nil {
		return
	}
	if _, asked := d.node.Annotations[kube.RebootRequested]; asked {
		return
	}
	log := d.Log.With(zap.String("node", d.node.Name), zap.String("sentinel", d.RebootSentinel))
	at, there, err := d.Sentinels.Sentinel(d.RebootSentinel)
	if err != nil {
		log.Warn("Cannot read the reboot sentinel", zap.Error(err))
		return
	}
	if !there {
		return
	}
	why := fmt.Sprintf("sentinel %s written %s", d.RebootSentinel, at.UTC().Format(time.RFC3339))
	if err := d.API.RequestReboot(ctx, why); err != nil {
		log.Warn("Cannot ask for a reboot; trying again at the next check", zap.Error(err))
		return
	}
	log.Info("Asked for a reboot: the sentinel file is there", zap.String("request", why))
	if d.events != nil {
		d.events.Event(true, false, "RebootRequested", "Node asks for a reboot: "+why)
	}
}
