// Package lifecycle writes the Node lifecycle conditions of Kubernetes 1.37
// (KEP-5683, feature gate NodeLifecycleConditions, alpha): MaintenancePlanned,
// DrainInProgress, Drained and MaintenanceInProgress, from the phases of the
// daemon's update, so that the DaemonSet and Job controllers, autoscalers and
// storage operators can tell a node in maintenance from a broken one. It
// hears of the phases and the waits as an observer of the update's runner
// (phases.Observer), and of the ends of maintenance through the daemon's
// adapters (its uncordon, the health gate's results, its idle passes), so
// no step knows of it. In 1.37 the conditions are
// the administrator's to set ("an administrator or an
// administrator-authorized controller"); the daemon writes them only when
// started with --node-lifecycle-conditions.
package lifecycle

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// Types lists the four conditions the daemon writes, in the order they
// become True during an update that drains.
func Types() []corev1.NodeConditionType {
	return []corev1.NodeConditionType{corev1.NodeMaintenancePlanned, corev1.NodeDrainInProgress,
		corev1.NodeDrained, corev1.NodeMaintenanceInProgress}
}

// The reasons the daemon gives (CamelCase, stable, as the KEP asks).
const (
	ReasonUpdatePlanned    = "NodeConfigUpdatePlanned"
	ReasonDraining         = "NodeConfigUpdateDraining"
	ReasonDrained          = "NodeConfigUpdateDrained"
	ReasonUpdating         = "NodeConfigUpdateInProgress"
	ReasonUpdateInProgress = "NodeConfigUpdateStarted"
	ReasonNoUpdate         = "NoNodeConfigUpdate"
)

// Conditions reads and writes the daemon's own Node's conditions
// (kube.Client).
type Conditions interface {
	NodeConditions(ctx context.Context) ([]corev1.NodeCondition, error)
	PatchNodeConditions(ctx context.Context, conds []corev1.NodeCondition) error
}

// Writer writes the lifecycle conditions to the Node through c. It hears
// of the update as its Observer (Observe) and, so that no condition
// outlives the maintenance it announced, of what ends one outside the
// observer's calls: this daemon lifting its cordon (Cluster), the health
// gate's rollback kept (HealthResult), the node idling on its desired
// config (Idle). Each write is made before the call returns, bounded by
// timeout: a queued write would be lost by the reboot that follows the
// write step, and the conditions must be on the Node before the
// disruption they announce. A write that fails is logged and never fails
// the update (the conditions are a report).
type Writer struct {
	c       Conditions
	timeout time.Duration
	log     *zap.Logger
	now     func() time.Time

	mu sync.Mutex // the update's goroutine and the daemon's loop
	// held is false once every condition is known clear: the Node was
	// read or written so since the last True written. It starts true, as
	// a daemon stopped mid-update may have left some True.
	held bool
	// waitingFor is the wait MaintenancePlanned last said, so that a wait
	// said again costs no request.
	waitingFor string
}

// New returns the Writer of the Node's lifecycle conditions.
func New(c Conditions, timeout time.Duration, log *zap.Logger) *Writer {
	return &Writer{c: c, timeout: timeout, log: log, now: time.Now, held: true}
}

// Observe returns an observer of the update that tells next everything and
// writes the lifecycle conditions of its phases and waits.
func (w *Writer) Observe(next phases.Observer) phases.Observer { return &observer{next: next, w: w} }

type observer struct {
	next phases.Observer
	w    *Writer
}

// want is the status a condition is to have, with why.
type want struct {
	typ     corev1.NodeConditionType
	status  corev1.ConditionStatus
	reason  string
	message string
}

func (o *observer) PhaseStarted(phase string) {
	o.next.PhaseStarted(phase)
	switch phase {
	case progress.StepCordon:
		// Cordon runs only for an update that drains, after its waits
		// (pause, window, blocking pods): the disruption is now next.
		o.w.write("cordon", want{corev1.NodeMaintenancePlanned, corev1.ConditionTrue, ReasonUpdatePlanned,
			"nodeconfd will drain this node and apply its new config"})
	case progress.StepDrain:
		o.w.write("drain", want{corev1.NodeDrainInProgress, corev1.ConditionTrue, ReasonDraining,
			"nodeconfd is evicting this node's pods"})
	case progress.StepWrite, progress.StepReboot:
		// The reboot step starts again after the boot, in the next
		// process: the condition is said again there, in case the write
		// before the reboot did not land.
		o.w.write(phase, want{corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, ReasonUpdating,
			"nodeconfd is applying this node's new config"},
			want{corev1.NodeMaintenancePlanned, corev1.ConditionFalse, ReasonUpdateInProgress,
				"The planned update has started (MaintenanceInProgress)"})
	}
}

func (o *observer) PhaseDone(phase string, took time.Duration) {
	o.next.PhaseDone(phase, took)
	switch phase {
	case progress.StepDrain:
		o.w.write("drain done", want{corev1.NodeDrainInProgress, corev1.ConditionFalse, ReasonDrained,
			"The drain has finished"},
			want{corev1.NodeDrained, corev1.ConditionTrue, ReasonDrained,
				"nodeconfd has evicted this node's pods for its update"})
	case progress.StepUncordon, progress.StepGiveBack:
		// The node is back in service (or an update cut short gave back
		// what it held): nothing of the update's maintenance holds.
		o.w.clear(phase + " done")
	}
}

func (o *observer) UpdateFinished(result string) {
	o.next.UpdateFinished(result)
	// A failed update is retried from its failed step, the node still
	// cordoned and drained: the conditions stay (one that gave back its
	// cordon cleared them as it did, Cluster). A superseded one is given
	// back by the next update's give-back step; one whose node went back
	// to its config is cleared as the node idles (Idle).
	if result == phases.ResultSucceeded {
		o.w.clear("update " + result)
	}
}

// Waiting says MaintenancePlanned while the update waits before it
// disrupts or changes the node (plannedWait): the update is certain, only
// its time is not.
func (o *observer) Waiting(reason string) {
	o.next.Waiting(reason)
	o.w.waiting(reason)
}

// clear sets every lifecycle condition False (the KEP's "False or
// removed": False keeps when it last changed).
func (w *Writer) clear(why string) {
	ws := make([]want, 0, len(Types()))
	for _, t := range Types() {
		ws = append(ws, want{t, corev1.ConditionFalse, ReasonNoUpdate, "No node config update holds this node"})
	}
	w.write(why, ws...)
}

// write brings the Node's conditions to ws, writing only those that
// change; a condition that does not exist yet or is already False is not
// written False (again). Writes that only clear are skipped while every
// condition is known clear (held). It reports whether the Node now says
// ws.
func (w *Writer) write(why string, ws ...want) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waitingFor = ""
	sets := false
	for _, x := range ws {
		sets = sets || x.status == corev1.ConditionTrue
	}
	if !sets && !w.held {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	have, err := w.c.NodeConditions(ctx)
	if err != nil {
		w.log.Warn("Could not read the node's lifecycle conditions; not written", zap.String("at", why), zap.Error(err))
		return false
	}
	conds := changes(have, ws, metav1.NewTime(w.now()))
	if len(conds) > 0 {
		if err := w.c.PatchNodeConditions(ctx, conds); err != nil {
			w.log.Warn("Could not write the node's lifecycle conditions", zap.String("at", why), zap.Error(err))
			return false
		}
	}
	for _, c := range conds {
		w.log.Info("Node lifecycle condition written", zap.String("at", why), zap.String("type", string(c.Type)),
			zap.String("status", string(c.Status)), zap.String("reason", c.Reason))
	}
	w.held = anyTrue(have, conds)
	return true
}

// anyTrue reports whether a lifecycle condition is True on a Node that had
// have and was written conds.
func anyTrue(have, conds []corev1.NodeCondition) bool {
	for _, t := range Types() {
		st := corev1.ConditionFalse
		for _, list := range [][]corev1.NodeCondition{have, conds} {
			for _, c := range list {
				if c.Type == t {
					st = c.Status
				}
			}
		}
		if st == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// changes returns the conditions of ws that differ from have, stamped now:
// lastTransitionTime moves only when the status does.
func changes(have []corev1.NodeCondition, ws []want, now metav1.Time) []corev1.NodeCondition {
	var out []corev1.NodeCondition
	for _, w := range ws {
		var cur *corev1.NodeCondition
		for i := range have {
			if have[i].Type == w.typ {
				cur = &have[i]
			}
		}
		if w.status == corev1.ConditionFalse && (cur == nil || cur.Status == corev1.ConditionFalse) {
			continue // never set, or already clear: nothing to say
		}
		if cur != nil && cur.Status == w.status && cur.Reason == w.reason && cur.Message == w.message {
			continue
		}
		c := corev1.NodeCondition{Type: w.typ, Status: w.status, Reason: w.reason, Message: w.message,
			LastHeartbeatTime: now, LastTransitionTime: now}
		if cur != nil && cur.Status == w.status {
			c.LastTransitionTime = cur.LastTransitionTime
		}
		out = append(out, c)
	}
	return out
}
