package lifecycle

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/phases"
)

// ReasonUpdateWaiting is MaintenancePlanned's reason while the update waits
// before its cordon or its first write.
const ReasonUpdateWaiting = "NodeConfigUpdateWaiting"

// plannedWait reports whether the update waiting for reason is maintenance
// planned: one of the waits before the update cordons or writes anything
// (the pause, the maintenance windows, blocking pods, the drain's
// forecast, alerts, the config failed elsewhere, the cluster's spread).
// The waits inside the drain and before the reboot are the drain's.
func plannedWait(reason string) bool {
	switch reason {
	case phases.HoldPaused, phases.HoldWindow, phases.HoldBlockingPods, phases.HoldDrainBlocked, phases.HoldAlerts,
		phases.WaitFailedElsewhere, phases.WaitUpdateSpread:
		return true
	}
	return false
}

// waiting says MaintenancePlanned=True for a planned wait, once per wait:
// the wait's own repeats cost no request.
func (w *Writer) waiting(reason string) {
	w.mu.Lock()
	same := reason == w.waitingFor
	if reason == "" {
		w.waitingFor = "" // a new wait of the same kind says itself again
	}
	w.mu.Unlock()
	if same || !plannedWait(reason) {
		return
	}
	ok := w.write("waiting "+reason, want{corev1.NodeMaintenancePlanned, corev1.ConditionTrue, ReasonUpdateWaiting,
		"nodeconfd will update this node's config once its update no longer waits (" + reason + ")"})
	if ok {
		w.mu.Lock()
		w.waitingFor = reason
		w.mu.Unlock()
	}
}

// Cluster returns next, whose Uncordon also clears the lifecycle
// conditions once this daemon's cordon is lifted: the update's end, the
// health gate's rollback, and every give-back of an update that did not
// get on (a failed drain, a new desired config, a pause, a wait after a
// cordon it had not recorded). The node is back in service, so no
// maintenance of this daemon holds it; an update that goes on says so
// again as it waits or cordons.
func (w *Writer) Cluster(next phases.Cluster) phases.Cluster { return cluster{Cluster: next, w: w} }

type cluster struct {
	phases.Cluster
	w *Writer
}

func (c cluster) Uncordon(ctx context.Context) error {
	if err := c.Cluster.Uncordon(ctx); err != nil {
		return err
	}
	c.w.clear("uncordon")
	return nil
}

// HealthResult returns the health gate's Observe: next (nil for none), and
// once the gate's rollback is kept ("rolled-back": the node runs its
// previous config, healthy) the conditions cleared, also for an update
// that cordoned nothing. A rollback that failed leaves them: the node
// waits, cordoned, for an administrator.
func (w *Writer) HealthResult(next func(result string)) func(result string) {
	return func(result string) {
		if next != nil {
			next(result)
		}
		if result == "rolled-back" {
			w.clear("health gate rolled back")
		}
	}
}

// Idle clears what a wait said once the node idles on its desired config:
// an update that waited and was then not to run (the desired config set
// back, the pause or the spread of a change undone) never finishes. It
// costs no request once every condition is known clear.
func (w *Writer) Idle() { w.clear("idle") }
