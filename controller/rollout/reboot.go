package rollout

import (
	"fmt"

	"github.com/nodeconfd/nodeconfd/names"
	corev1 "k8s.io/api/core/v1"
)

// Reboots on request (kured's job, issue 30): a node asks with the
// RebootRequested annotation; the controller answers with RebootGranted
// when the pool has room, as it hands out configs, and a granted node
// counts as unavailable until it has rebooted and its request is gone.
// A config rollout goes first: reboots take the room it leaves.

// rebootGranted reports whether the node holds a grant for its request.
func rebootGranted(n *corev1.Node) bool {
	g, ok := n.Annotations[names.RebootGranted]
	return ok && g == n.Annotations[names.RebootRequested] && n.Annotations[names.RebootRequested] != ""
}

// staleGrants are the nodes whose grant no longer answers their request
// (the reboot is done and the daemon removed the request, or an
// administrator withdrew or changed it): the grant is removed.
func staleGrants(nodes []*corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		if _, ok := n.Annotations[names.RebootGranted]; ok && !rebootGranted(n) {
			out = append(out, n.Name)
		}
	}
	return out
}

// grantReboots adds to d the nodes whose request may be granted now, in
// the rollout's order, within the room the pool has left after d.Hand.
// Only a node that runs the pool's config and is done with it (a node
// being updated reboots, if at all, with its update), ready and not
// paused, is granted; a paused pool, a pool whose config failed the health
// gate, or a closed maintenance window grants none.
func grantReboots(in Input, d *Decision) {
	var asking []*corev1.Node
	for _, n := range in.Nodes {
		if n.Annotations[names.RebootRequested] != "" && !rebootGranted(n) {
			asking = append(asking, n)
		}
	}
	if len(asking) == 0 || in.Target == "" || in.Pool.Spec.Paused || healthGate(in.Nodes, in.Target) != "" {
		return
	}
	var cands []*corev1.Node
	for _, n := range asking {
		_, paused := n.Annotations[names.PauseAnnotation]
		if isUpdated(n, in.Target) && notReady(n) == "" && !paused {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return
	}
	maxUnavail, err := MaxUnavailable(in.Pool, len(in.Nodes))
	if err != nil {
		return
	}
	room, busy := capacity(in, maxUnavail)
	room -= len(d.Hand)
	if room <= 0 {
		d.Waiting = joinWaits(d.Waiting, fmt.Sprintf("reboot requested on %s: %d of %d nodes unavailable (maxUnavailable %d): %s",
			namesOf(cands), len(busy)+len(d.Hand), len(in.Nodes), maxUnavail, joinReasons(busy)))
		return
	}
	if msg, after := windowWait(in); msg != "" {
		d.Waiting = joinWaits(d.Waiting, "reboot requested on "+namesOf(cands)+": "+msg)
		if d.RequeueAfter == 0 || after < d.RequeueAfter {
			d.RequeueAfter = after
		}
		return
	}
	sortNodes(cands)
	for _, n := range cands[:min(room, len(cands))] {
		d.Grant = append(d.Grant, n.Name)
	}
}

func namesOf(nodes []*corev1.Node) string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return joinCapped(names)
}

func joinWaits(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
