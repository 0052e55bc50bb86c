package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/names"
)

// PoolETA is when the pool's rollout of Target is predicted to end, and
// from what (the Updating condition's message says both).
type PoolETA struct {
	Finish time.Time
	// PerNode is one node's update; Samples how many nodes' updates it
	// is the median of; OfTarget says they were updates to Target (else
	// the nodes' last updates, to any config: before a node finished
	// Target).
	PerNode  time.Duration
	Samples  int
	OfTarget bool
	// Updating and Left are the nodes updating now and those still to be
	// handed Target.
	Updating, Left int
}

// etaStep is the grain of the times the prediction reads from the clock:
// the pool's status is rewritten only when its message changes, so a
// prediction that moved with every reconcile would cost a write each.
const etaStep = 10 * time.Second

// Forecast predicts when the rollout of Target ends: each node updating
// now ends when it started plus one node's update (never before now), and
// the nodes still to be handed Target take the maxUnavailable slots as
// they free, each after the pool's soak, for one node's update each. A
// node's update is the median, over the pool's nodes that finished
// Target, of their MachineConfigNodes' UpdatePrepared to Updated
// transitions (what the node's daemon measured and wrote); before any
// finished, of the nodes' last updates. ok is false when nothing is left
// to update or nothing is known to predict from. Waits (windows, pauses,
// blocked drains) are not foreseen.
func Forecast(in Input, maxUnavail int) (PoolETA, bool) {
	e := PoolETA{}
	e.PerNode, e.Samples, e.OfTarget = perNode(in)
	var slots []time.Time // when each slot frees
	now := in.Now.Truncate(etaStep)
	for _, n := range in.Nodes {
		switch {
		case isUpdated(n, in.Target):
		case n.Annotations[names.DesiredConfig] == in.Target:
			e.Updating++
			slots = append(slots, startedAt(in.MCNs[n.Name], in.Target, now).Add(e.PerNode))
		default:
			e.Left++
		}
	}
	if e.Updating+e.Left == 0 || e.Samples == 0 {
		return e, false
	}
	for i := range slots {
		if slots[i].Before(now) { // overdue: it ends soon; the estimate moves once a minute
			slots[i] = in.Now.Truncate(time.Minute).Add(time.Minute)
		}
	}
	for len(slots) < maxUnavail {
		slots = append(slots, now)
	}
	for range e.Left {
		i := earliest(slots)
		slots[i] = slots[i].Add(in.Soak + e.PerNode)
	}
	e.Finish = slices.MaxFunc(slots, time.Time.Compare)
	return e, true
}

// perNode is one node's update: the median of the durations the pool's
// MachineConfigNodes show for Target, else for their last updates.
func perNode(in Input) (time.Duration, int, bool) {
	var ofTarget, last []time.Duration
	for _, n := range in.Nodes {
		d, cur, ok := lastUpdate(in.MCNs[n.Name])
		if !ok {
			continue
		}
		last = append(last, d)
		if cur == in.Target && isUpdated(n, in.Target) {
			ofTarget = append(ofTarget, d)
		}
	}
	if len(ofTarget) > 0 {
		return medianDuration(ofTarget), len(ofTarget), true
	}
	if len(last) > 0 {
		return medianDuration(last), len(last), false
	}
	return 0, 0, false
}

// lastUpdate is how long a MachineConfigNode's last update took, from its
// UpdatePrepared condition's transition to True to its Updated one's, and
// the config it ran to. A node's first config (adopted, or written with
// no update before) counts too.
func lastUpdate(mcn *mcfgv1.MachineConfigNode) (time.Duration, string, bool) {
	if mcn == nil || mcn.Status.ConfigVersion == nil {
		return 0, "", false
	}
	prep := mcnCondition(mcn, string(mcfgv1.MachineConfigNodeUpdatePrepared))
	upd := mcnCondition(mcn, string(mcfgv1.MachineConfigNodeUpdated))
	if !isTrue(prep) || !isTrue(upd) || upd.LastTransitionTime.Before(&prep.LastTransitionTime) {
		return 0, "", false
	}
	return upd.LastTransitionTime.Sub(prep.LastTransitionTime.Time), mcn.Status.ConfigVersion.Current, true
}

// startedAt is when a node handed target began its update: its
// UpdatePrepared condition's transition to True once the node says it
// prepares target, else now (just handed: its daemon is about to start).
func startedAt(mcn *mcfgv1.MachineConfigNode, target string, now time.Time) time.Time {
	if mcn == nil || mcn.Status.ConfigVersion == nil || mcn.Status.ConfigVersion.Desired != target {
		return now
	}
	if c := mcnCondition(mcn, string(mcfgv1.MachineConfigNodeUpdatePrepared)); isTrue(c) && !c.LastTransitionTime.After(now.Add(etaStep)) {
		return c.LastTransitionTime.Time
	}
	return now
}

// earliest is the index of the slot that frees first.
func earliest(slots []time.Time) int {
	i := 0
	for j, t := range slots {
		if t.Before(slots[i]) {
			i = j
		}
	}
	return i
}

func isTrue(c *metav1.Condition) bool { return c != nil && c.Status == metav1.ConditionTrue }

func medianDuration(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	m := len(ds) / 2
	if len(ds)%2 == 1 {
		return ds[m]
	}
	return (ds[m-1] + ds[m]) / 2
}

// String is the prediction as the Updating condition's message ends:
// "expected to finish by <RFC3339>" first, so that a reader can cut it out.
func (e PoolETA) String() string {
	of := "the last updates of"
	if e.OfTarget {
		of = "the updates to this config of"
	}
	return fmt.Sprintf("expected to finish by %s (%d updating, %d to go; about %s per node, the median of %s %d nodes)",
		e.Finish.UTC().Format(time.RFC3339), e.Updating, e.Left, e.PerNode.Round(time.Second), of, e.Samples)
}

// etaText is the prediction for the Updating message, "" when there is
// none: the pool waits on something the prediction cannot foresee (a
// pause, a window, the health gate), or nothing is known to predict from.
func etaText(in Input, waiting string) string {
	if len(in.Windows) > 0 || waiting != "" && !isRoomWait(waiting) {
		return ""
	}
	maxUnavail, err := MaxUnavailable(in.Pool, len(in.Nodes))
	if err != nil {
		return ""
	}
	e, ok := Forecast(in, maxUnavail)
	if !ok {
		return ""
	}
	return e.String()
}

// isRoomWait reports whether the rollout waits only for room or a soak:
// the waits the prediction counts.
func isRoomWait(waiting string) bool {
	for _, p := range []string{"nodes unavailable (maxUnavailable", "next node at "} {
		if strings.Contains(waiting, p) {
			return true
		}
	}
	return false
}
