package drain

import (
	"context"

	"github.com/nodeconfd/nodeconfd/cluster/surge"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// WouldBlock says why a drain that started now could not finish, or ""
// when it could: the pods that a PodDisruptionBudget at zero covers and no
// surge could free (their owner did not opt in, must not be surged, or the
// budget allows no disruption whatever the replicas: maxUnavailable 0,
// minAvailable 100%). The update waits on it before its cordon, so that a
// node is not cordoned for a drain that cannot finish (waits.Source).
// Pods no controller would recreate are the cordon's own check
// (CheckDrain), not this one's. The pods are grouped by cause as the
// drain's progress groups them (groupedBlockers), each budget expanded.
func (d *Drainer) WouldBlock(ctx context.Context) (string, error) {
	_, held, err := d.forecast(ctx)
	if err != nil || len(held) == 0 {
		return "", err
	}
	var blocking []blocker
	type verdict struct {
		ok  bool
		why string // why an owner that opted in is not surged
	}
	verdicts := map[string]verdict{} // by owner: one look per owner
	for _, h := range held {
		note := ""
		if d.Surge.Max > 0 && liftable(h.zero) {
			key := ownerKey(h.pod)
			v, seen := verdicts[key]
			if !seen {
				_, quiet, why, err := surge.Surgeable(ctx, d.Client, h.pod)
				if err != nil {
					return "", err
				}
				v = verdict{ok: !quiet && why == "", why: why}
				verdicts[key] = v
			}
			if v.ok {
				continue
			}
			if v.why != "" {
				note = "; cannot surge: " + v.why
			}
		}
		blocking = append(blocking, blocker{Pod: podName(h.pod), Why: describeBudgets(h.zero) + note})
	}
	if len(blocking) == 0 {
		return "", nil
	}
	// Grouped as the drain's own progress is: the pods one budget holds
	// are one part of the message.
	return "The drain could not finish now: " + groupedBlockers(blocking) +
		"; the update waits uncordoned until the budgets allow it", nil
}

// heldPod is a pod a drain would evict that budgets at zero cover.
type heldPod struct {
	pod  *corev1.Pod
	zero []policyv1.PodDisruptionBudget
}

// liftable says whether one more replica can make every budget allow a
// disruption: not one of maxUnavailable 0 or minAvailable 100%.
func liftable(budgets []policyv1.PodDisruptionBudget) bool {
	for _, b := range budgets {
		if mu := b.Spec.MaxUnavailable; mu != nil && isZero(*mu) {
			return false
		}
		if ma := b.Spec.MinAvailable; ma != nil && ma.Type == intstr.String && ma.StrVal == "100%" {
			return false
		}
	}
	return true
}

func isZero(v intstr.IntOrString) bool {
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	return v.StrVal == "0%" || v.StrVal == "0"
}
