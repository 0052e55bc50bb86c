package phases

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// VolumeWait holds a reboot until the volumes the drain's pods used are
// detached from the node: a reboot before the attach-detach controller has
// detached them leaves them attached to a node that is gone, and their
// pods, started elsewhere, fail with Multi-Attach errors until the
// kubelet's force detach, 6 minutes later.
type VolumeWait struct {
	// Attached names what is still attached (kube.Client.AttachedVolumes).
	Attached func(ctx context.Context) ([]string, error)
	// Timeout bounds the wait: past it the node reboots all the same, and
	// says so.
	Timeout time.Duration
	// Every is how often Attached is asked.
	Every time.Duration
}

// maxVolumesNamed is how many attachments a message names.
const maxVolumesNamed = 5

// VolumesDetached is the reboot's gate (waitVolumesDetached).
func VolumesDetached() Gate { return Gate{Name: "volumes-detached", Wait: waitVolumesDetached} }

// waitVolumesDetached is the reboot's wait: once the drain is done and
// before the reboot is asked for (never after the boot), it waits until
// nothing the node's pods used is attached, at most Timeout, saying in
// RebootedNode (reason Waiting) what it waits for.
func waitVolumesDetached(ctx context.Context, d Data) error {
	v := d.Ports().Volumes
	if v == nil || v.Timeout <= 0 || !d.Progress().Reboot.RequestedAt.IsZero() {
		return nil
	}
	log := LogFrom(ctx, zap.NewNop())
	start := d.Clock()
	for {
		left, err := v.Attached(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		elapsed := d.Clock().Sub(start)
		switch {
		case err == nil && len(left) == 0:
			if elapsed > 0 {
				log.Info("Volumes detached; rebooting", zap.Duration("waited", elapsed.Round(time.Second)))
			}
			return nil
		case elapsed >= v.Timeout:
			log.Warn("Rebooting with volumes still attached: the wait for them is over",
				zap.Int("attached", len(left)), zap.Duration("timeout", v.Timeout), zap.Error(err))
			return nil
		}
		d.Waiting(WaitVolumesDetached)
		_ = d.Report(ctx, volumesMessage(left, err, elapsed, v.Timeout))
		if err := Sleep(ctx, v.Every); err != nil {
			return err
		}
	}
}

// volumesMessage says what the reboot waits for.
func volumesMessage(left []string, err error, elapsed, timeout time.Duration) string {
	when := fmt.Sprintf("%s of %s, then the node reboots all the same", elapsed.Round(time.Second), timeout)
	if err != nil {
		return fmt.Sprintf("Cannot tell whether the drained pods' volumes are detached (%v); waiting before the reboot (%s)", err, when)
	}
	named := left[:min(len(left), maxVolumesNamed)]
	msg := "Waiting for " + plan.Plural(len(left), "volume") + " to detach before the reboot: " + strings.Join(named, ", ")
	if more := len(left) - len(named); more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	return msg + " (" + when + ")"
}
