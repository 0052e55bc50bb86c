package daemon

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/names"
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
func (d *Daemon) grantedReboot(ctx context.Context, current string) *progress.Record {
	why, granted := kube.RebootRequest(d.node.Annotations)
	if !granted || d.withdrawStale(ctx, why) {
		return nil
	}
	d.Log.Info("Reboot request granted; rebooting the node through the update's steps", zap.String("node", d.node.Name),
		zap.String("config", current), zap.String("request", why))
	rec := progress.New(current, current)
	rec.RebootRequest = why
	return rec
}

// idleDelay is when an idle daemon looks again without an event: for the
// sentinel or the check command, when it has one.
func (d *Daemon) idleDelay() time.Duration {
	if d.RebootSentinel == "" && len(d.RebootCommand) == 0 {
		return 0
	}
	if d.RebootCheckInterval > 0 {
		return d.RebootCheckInterval
	}
	return DefaultRebootCheckInterval
}

// checkRebootNeeded asks for a reboot when the sentinel file is there, or
// the check command exits 0, and the node has no request yet. A failure is
// logged; the next check tries again.
func (d *Daemon) checkRebootNeeded(ctx context.Context) {
	if why, asked := d.node.Annotations[names.RebootRequested]; asked {
		d.withdrawStale(ctx, why)
		return
	}
	log := d.Log.With(zap.String("node", d.node.Name))
	why := d.sentinelRequest(log)
	if why == "" {
		why = d.commandRequest(ctx, log)
	}
	if why == "" {
		return
	}
	if err := d.API.RequestReboot(ctx, why); err != nil {
		log.Warn("Cannot ask for a reboot; trying again at the next check", zap.Error(err))
		return
	}
	log.Info("Asked for a reboot", zap.String("request", why))
	if d.events != nil {
		d.events.Event(true, false, "RebootRequested", "Node asks for a reboot: "+why)
	}
}

// sentinelRequest is the request of the sentinel file, "" when it is not
// there (or none is watched).
func (d *Daemon) sentinelRequest(log *zap.Logger) string {
	if d.RebootSentinel == "" || d.Sentinels == nil {
		return ""
	}
	at, there, err := d.Sentinels.Sentinel(d.RebootSentinel)
	if err != nil {
		log.Warn("Cannot read the reboot sentinel", zap.String("sentinel", d.RebootSentinel), zap.Error(err))
		return ""
	}
	if !there {
		return ""
	}
	return fmt.Sprintf("sentinel %s written %s", d.RebootSentinel, at.UTC().Format(time.RFC3339))
}

// commandRequest runs the check command (kured's --reboot-sentinel-command:
// exit 0 asks for a reboot) and returns its request, "" when it exits
// otherwise. A command that cannot run is logged, as it would never ask.
func (d *Daemon) commandRequest(ctx context.Context, log *zap.Logger) string {
	if len(d.RebootCommand) == 0 || d.RunCommand == nil {
		return ""
	}
	err := d.RunCommand(ctx, d.RebootCommand)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return fmt.Sprintf("command %s exited 0 at %s", strings.Join(d.RebootCommand, " "), d.Now().UTC().Format(time.RFC3339))
	case !errors.As(err, &exit):
		log.Warn("Cannot run the reboot check command", zap.Strings("command", d.RebootCommand), zap.Error(err))
	}
	return ""
}

// withdrawStale withdraws the daemon's own request for the sentinel once
// the sentinel is gone before the reboot (someone else rebooted the node,
// emptying /run, or removed the file): the node needs no reboot any more,
// and one granted now would be a second. It reports whether it did.
func (d *Daemon) withdrawStale(ctx context.Context, why string) bool {
	if d.RebootSentinel == "" || d.Sentinels == nil || !strings.HasPrefix(why, "sentinel "+d.RebootSentinel+" ") {
		return false
	}
	if _, there, err := d.Sentinels.Sentinel(d.RebootSentinel); err != nil || there {
		return false
	}
	log := d.Log.With(zap.String("node", d.node.Name), zap.String("request", why))
	if err := d.API.ClearRebootRequest(ctx, why); err != nil {
		log.Warn("Cannot withdraw the reboot request whose sentinel is gone; trying again at the next check", zap.Error(err))
		return true
	}
	log.Info("Withdrew the reboot request: its sentinel file is gone")
	return true
}
