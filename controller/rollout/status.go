package rollout

import (
	"errors"
	"fmt"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/render"
)

// Status is the pool's status after this reconcile, as upstream's
// calculateStatus: the machine counts, status.configuration moved to
// Target once every node is updated and ready, and the Updated, Updating,
// NodeDegraded and Degraded conditions with upstream's messages; since
// this controller renders too, it also sets RenderDegraded from renderErr.
// Next's Waiting is added to the Updating message. A condition's
// LastTransitionTime moves only when its status changes, so a reconcile
// that finds nothing new returns the status it was given.
func Status(in Input, renderErr error) mcfgv1.MachineConfigPoolStatus {
	pool := in.Pool
	c := count(in)
	st := mcfgv1.MachineConfigPoolStatus{
		ObservedGeneration:      pool.Generation,
		MachineCount:            c.total,
		UpdatedMachineCount:     c.updated,
		ReadyMachineCount:       c.ready,
		UnavailableMachineCount: c.unavailable,
		DegradedMachineCount:    int32(len(c.degraded)),
		Configuration:           pool.Status.Configuration,
		CertExpirys:             pool.Status.CertExpirys,
		PoolSynchronizersStatus: pool.Status.PoolSynchronizersStatus,
		Conditions:              append([]mcfgv1.MachineConfigPoolCondition(nil), pool.Status.Conditions...),
	}
	set := func(t mcfgv1.MachineConfigPoolConditionType, s corev1.ConditionStatus, reason, msg string) {
		st.Conditions = setCondition(st.Conditions, mcfgv1.MachineConfigPoolCondition{
			Type: t, Status: s, Reason: reason, Message: msg,
		}, in.Now)
	}
	line := "MachineConfig " + in.Target
	allUpdated := c.updated == c.total && c.ready == c.total && c.unavailable == 0
	// A pool that never had a config and selects no MachineConfig is not
	// broken: a kubeadm cluster's master pool before any master fragment.
	// Upstream has no such pool (it ships fragments for both).
	unconfigured := in.Target == "" && errors.Is(renderErr, render.ErrNothingSelected)
	if unconfigured {
		renderErr = nil
	}
	switch {
	case unconfigured:
		set(mcfgv1.MachineConfigPoolUpdated, corev1.ConditionFalse, "NoMachineConfigs", "No MachineConfig matches the pool's "+
			"spec.machineConfigSelector yet; its nodes are handed no config")
		set(mcfgv1.MachineConfigPoolUpdating, corev1.ConditionFalse, "", "")
	case allUpdated && c.total == 0:
		// Upstream says "All nodes are updated" here too; an administrator
		// whose nodes carry none of the labels the pool selects must read
		// why nothing happened.
		set(mcfgv1.MachineConfigPoolUpdated, corev1.ConditionTrue, "NoNodes", "No node is in this pool: its "+
			"spec.nodeSelector selects none, or each node it selects is in another pool; nothing to update to "+line)
		set(mcfgv1.MachineConfigPoolUpdating, corev1.ConditionFalse, "", "")
		st.Configuration = *pool.Spec.Configuration.DeepCopy()
		st.Configuration.Name = in.Target
	case allUpdated:
		set(mcfgv1.MachineConfigPoolUpdated, corev1.ConditionTrue, "", "All nodes are updated with "+line)
		set(mcfgv1.MachineConfigPoolUpdating, corev1.ConditionFalse, "", "")
		st.Configuration = *pool.Spec.Configuration.DeepCopy()
		st.Configuration.Name = in.Target
	case pool.Spec.Paused:
		set(mcfgv1.MachineConfigPoolUpdated, corev1.ConditionFalse, "", "")
		set(mcfgv1.MachineConfigPoolUpdating, corev1.ConditionFalse, "", "Pool is paused; will not update to "+line)
	default:
		set(mcfgv1.MachineConfigPoolUpdated, corev1.ConditionFalse, "", "")
		msg := "All nodes are updating to " + line
		w := Next(in).Waiting
		if w != "" {
			msg += "; " + w
		}
		if e := etaText(in, w); e != "" { // eta.go
			msg += "; " + e
		}
		set(mcfgv1.MachineConfigPoolUpdating, corev1.ConditionTrue, "", msg)
	}

	switch {
	case in.Breach != nil && in.Breach.Config == in.Target:
		set(SLOBreached, corev1.ConditionTrue, in.Target, in.Breach.String())
	case BreachOf(pool, in.Target) == "" && hasCondition(pool, SLOBreached):
		set(SLOBreached, corev1.ConditionFalse, "", "")
	}

	renderMsg := ""
	if renderErr != nil {
		renderMsg = fmt.Sprintf("Failed to render configuration for pool %s: %v", pool.Name, renderErr)
		set(mcfgv1.MachineConfigPoolRenderDegraded, corev1.ConditionTrue, "", renderMsg)
	} else {
		set(mcfgv1.MachineConfigPoolRenderDegraded, corev1.ConditionFalse, "", "")
	}
	nodeMsg := ""
	if len(c.degraded) > 0 {
		nodeMsg = joinCapped(c.degraded)
		set(mcfgv1.MachineConfigPoolNodeDegraded, corev1.ConditionTrue,
			fmt.Sprintf("%d nodes are reporting degraded status on sync", len(c.degraded)), nodeMsg)
	} else {
		set(mcfgv1.MachineConfigPoolNodeDegraded, corev1.ConditionFalse, "", "")
	}
	switch {
	case nodeMsg != "":
		set(mcfgv1.MachineConfigPoolDegraded, corev1.ConditionTrue, "", nodeMsg)
	case renderMsg != "":
		set(mcfgv1.MachineConfigPoolDegraded, corev1.ConditionTrue, "", renderMsg)
	default:
		set(mcfgv1.MachineConfigPoolDegraded, corev1.ConditionFalse, "", "")
	}
	return st
}

// counts are the pool's machine counts and its degraded nodes' messages.
type counts struct {
	total, updated, ready, unavailable int32
	degraded                           []string
}

// count counts as upstream's GetMachinesByState: updated when done with
// Target, ready when updated and ready, unavailable as unavailable(), and
// degraded as isDegraded(), each degraded node with what it reports
// (upstream's "Node X is reporting: ..." from the MachineConfigNode's
// NodeDegraded message and the daemon's reason annotation).
func count(in Input) counts {
	c := counts{total: int32(len(in.Nodes))}
	for _, n := range in.Nodes {
		mcn := in.MCNs[n.Name]
		if isUpdated(n, in.Target) {
			c.updated++
			if notReady(n) == "" {
				c.ready++
			}
		}
		if unavailable(n, mcn) != "" {
			c.unavailable++
		}
		if isDegraded(n, mcn) {
			c.degraded = append(c.degraded, degradedText(n, mcn))
		}
	}
	return c
}

// degradedText is what a degraded node reports: its MachineConfigNode's
// NodeDegraded message and the daemon's reason annotation, or its state
// when it gives neither.
func degradedText(n *corev1.Node, mcn *mcfgv1.MachineConfigNode) string {
	var parts []string
	// The node's own words, cleaned and cut before they are quoted: the
	// pool's status must not carry what a node wrote raw, nor grow with it.
	if c := mcnDegraded(mcn); c != nil && c.Message != "" {
		parts = append(parts, fmt.Sprintf("Node %s is reporting: %q", n.Name, Clean(c.Message, maxNodeText)))
	}
	if r := n.Annotations[names.Reason]; r != "" {
		parts = append(parts, fmt.Sprintf("Node %s is reporting: %q", n.Name, Clean(r, maxNodeText)))
	}
	if len(parts) == 0 {
		what := "state " + n.Annotations[names.State]
		if mcnDegraded(mcn) != nil {
			what = "NodeDegraded"
		}
		parts = append(parts, fmt.Sprintf("Node %s is reporting: %q", n.Name, what))
	}
	return strings.Join(parts, ", ")
}

// setCondition sets c in conds in place (appending it when absent). As
// upstream's SetMachineConfigPoolCondition, a condition whose status is
// unchanged keeps its LastTransitionTime; unlike it, the condition keeps
// its position, so that a changed message does not reorder the list.
func setCondition(conds []mcfgv1.MachineConfigPoolCondition, c mcfgv1.MachineConfigPoolCondition, now time.Time) []mcfgv1.MachineConfigPoolCondition {
	c.LastTransitionTime = metav1.NewTime(now)
	out := conds[:0]
	found := false
	for _, old := range conds {
		if old.Type != c.Type {
			out = append(out, old)
			continue
		}
		if found {
			continue // a duplicate of the type: keep the first only
		}
		found = true
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, c)
	}
	if !found {
		out = append(out, c)
	}
	return out
}

func hasCondition(pool *mcfgv1.MachineConfigPool, t mcfgv1.MachineConfigPoolConditionType) bool {
	for _, c := range pool.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
