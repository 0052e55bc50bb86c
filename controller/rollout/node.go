package rollout

import (
	"cmp"
	"slices"
	"time"

	"github.com/nodeconfd/nodeconfd/names"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeReason is a node and why a decision treats it as it does.
type NodeReason struct {
	Node   string
	Reason string
}

// String is "node reason", the form messages list them in.
func (r NodeReason) String() string { return r.Node + " " + r.Reason }

// notReady says why workloads cannot be scheduled on the node, or "" when
// they can. As upstream's CheckNodeReady: Ready must be True, DiskPressure
// and NetworkUnavailable False (a condition not reported does not count),
// and the node must be schedulable; the first failing condition is named.
func notReady(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		switch {
		case c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue:
			return "NotReady"
		case c.Type == corev1.NodeDiskPressure && c.Status != corev1.ConditionFalse:
			return "DiskPressure"
		case c.Type == corev1.NodeNetworkUnavailable && c.Status != corev1.ConditionFalse:
			return "NetworkUnavailable"
		}
	}
	if n.Spec.Unschedulable {
		return "unschedulable"
	}
	return ""
}

// isDone reports whether the daemon has finished the node's desired
// config: current and desired set and equal, and state Done.
func isDone(n *corev1.Node) bool {
	cur, des := n.Annotations[names.CurrentConfig], n.Annotations[names.DesiredConfig]
	return cur != "" && cur == des && n.Annotations[names.State] == names.StateDone
}

// isUpdated reports whether the node runs target and is done with it.
func isUpdated(n *corev1.Node, target string) bool {
	return isDone(n) && n.Annotations[names.DesiredConfig] == target
}

// isFresh reports whether no config was ever handed to the node nor run on
// it: no currentConfig, no desiredConfig, no state. It is a node that
// joined, or one of a cluster nodeconfd was just installed on: nothing the
// pool manages runs there, so it updates nothing and is not unavailable
// (counting it so deadlocked a fresh install: every node waited for the
// pool, the pool for every node). Its first config is its adoption.
func isFresh(n *corev1.Node) bool {
	return n.Annotations[names.CurrentConfig] == "" && n.Annotations[names.DesiredConfig] == "" && n.Annotations[names.State] == ""
}

// isFailing reports whether the daemon gave up on the node's desired
// config (Degraded or Unreconcilable while current differs from desired).
// Upstream lets such a node be retargeted without counting it unavailable,
// so that a fixed config can reach a node stuck on a broken one.
func isFailing(n *corev1.Node) bool {
	if n.Annotations[names.CurrentConfig] == n.Annotations[names.DesiredConfig] {
		return false
	}
	s := n.Annotations[names.State]
	return s == names.StateDegraded || s == names.StateUnreconcilable
}

// isDegraded reports whether the node counts as degraded in the pool's
// status: the daemon's state Degraded or Unreconcilable (upstream), or its
// MachineConfigNode's NodeDegraded True (which upstream reads too, and
// which nodeconfd also sets for a config drift on a node that is Done).
func isDegraded(n *corev1.Node, mcn *mcfgv1.MachineConfigNode) bool {
	s := n.Annotations[names.State]
	return s == names.StateDegraded || s == names.StateUnreconcilable || mcnDegraded(mcn) != nil
}

// mcnDegraded is the MachineConfigNode's NodeDegraded condition when True.
func mcnDegraded(mcn *mcfgv1.MachineConfigNode) *metav1.Condition {
	c := mcnCondition(mcn, string(mcfgv1.MachineConfigNodeNodeDegraded))
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

func mcnCondition(mcn *mcfgv1.MachineConfigNode, t string) *metav1.Condition {
	if mcn == nil {
		return nil
	}
	for i := range mcn.Status.Conditions {
		if mcn.Status.Conditions[i].Type == t {
			return &mcn.Status.Conditions[i]
		}
	}
	return nil
}

// unavailable says why the node counts against maxUnavailable, or "" when
// it does not. As upstream's IsUnavailableForUpdate: a node that is not
// ready, or whose daemon is still working (or has not started), may go
// unschedulable, so another update must not start; a node whose daemon
// failed (isFailing) is available, as it can be retargeted, and so is a
// fresh node (isFresh), which upstream never sees: its nodes boot with
// their pool's config. nodeconfd adds
// a node that is done but whose MachineConfigNode says NodeDegraded (a
// config drift, an unreadable progress record): it is not known healthy.
func unavailable(n *corev1.Node, mcn *mcfgv1.MachineConfigNode) string {
	if r := notReady(n); r != "" {
		return r
	}
	if rebootGranted(n) {
		return "rebooting on request"
	}
	if isFailing(n) || isFresh(n) {
		return ""
	}
	if !isDone(n) {
		if n.Annotations[names.CurrentConfig] != n.Annotations[names.DesiredConfig] {
			return "updating"
		}
		if s := n.Annotations[names.State]; s != "" {
			return "state " + s
		}
		return "no state yet"
	}
	if mcnDegraded(mcn) != nil {
		return "NodeDegraded"
	}
	return ""
}

// unavailableNodes lists the unavailable nodes with their reasons.
func unavailableNodes(nodes []*corev1.Node, mcns map[string]*mcfgv1.MachineConfigNode) []NodeReason {
	var out []NodeReason
	for _, n := range nodes {
		if r := unavailable(n, mcns[n.Name]); r != "" {
			out = append(out, NodeReason{Node: n.Name, Reason: r})
		}
	}
	return out
}

// sortNodes orders nodes as upstream's sortNodeList rolls them out: zone by
// zone (topology.kubernetes.io/zone, in name order), nodes without a zone
// last, and oldest first within a zone, so that an update does not take
// down the same kind of pods in several zones at once. Ties (same zone and
// creation time) go by name, where upstream's unstable sort leaves them in
// any order.
func sortNodes(nodes []*corev1.Node) {
	slices.SortFunc(nodes, func(a, b *corev1.Node) int {
		az, aok := a.Labels[ZoneLabel]
		bz, bok := b.Labels[ZoneLabel]
		switch {
		case aok && !bok:
			return -1
		case !aok && bok:
			return 1
		case aok && az != bz:
			return cmp.Compare(az, bz)
		}
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// maxClockSkew is how far ahead of the controller's clock a node's own
// clock may run: a finish time later than that is not believed.
const maxClockSkew = time.Minute

// finishedAt is when the node finished target: its MachineConfigNode's
// Updated condition's transition to True, when the MachineConfigNode
// reports target as current. ok is false when the node has not finished
// target or its MachineConfigNode does not (yet) say when.
//
// The time is the node's word. One more than maxClockSkew after now is
// not believed and counts as the zero time (the node's soak is over): a
// node that wrote a time years ahead would otherwise hold its whole pool
// for that long, past its one place in maxUnavailable, while it gains
// nothing it could not have by writing a time in the past.
func finishedAt(n *corev1.Node, mcn *mcfgv1.MachineConfigNode, target string, now time.Time) (t time.Time, ok bool) {
	if !isUpdated(n, target) || mcn == nil || mcn.Status.ConfigVersion == nil ||
		mcn.Status.ConfigVersion.Current != target {
		return time.Time{}, false
	}
	c := mcnCondition(mcn, string(mcfgv1.MachineConfigNodeUpdated))
	if c == nil || c.Status != metav1.ConditionTrue {
		return time.Time{}, false
	}
	if c.LastTransitionTime.Time.After(now.Add(maxClockSkew)) {
		return time.Time{}, true
	}
	return c.LastTransitionTime.Time, true
}
