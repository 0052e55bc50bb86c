package rollout

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/window"
)

// Input is what the pool controller knows of one pool at a reconcile.
type Input struct {
	Pool *mcfgv1.MachineConfigPool
	// Target is the rendered config the pool rolls out.
	Target string
	// Nodes are the pool's nodes (pools.Membership.For already applied).
	Nodes []*corev1.Node
	// MCNs are the nodes' MachineConfigNodes by node name; some may lack.
	MCNs map[string]*mcfgv1.MachineConfigNode
	Now  time.Time
	// Soak is how long after a node finished Target the next node is
	// handed it; 0 for no soak.
	Soak time.Duration
	// Windows are the pool's maintenance windows; none means always open.
	Windows window.Windows
	// DeferNode is the node the controller itself runs on: while other
	// nodes need Target it is passed over, so that the controller's own
	// drain comes last (upstream defers the operator's node the same way).
	DeferNode string
	// Breach is an SLO broken by Target just now (slo.go); SLOHold says
	// why the SLOs cannot be asked during a soak (the rollout then waits).
	// BreachAction is the pool's (BreachRollback, BreachStop) and
	// Previous the config a rolled-back node is handed.
	Breach       *Breach
	SLOHold      string
	BreachAction string
	Previous     string
	// DrainBlocked, when set, says why a node's drain could not finish now
	// ("" when it could): a PodDisruptionBudget at zero that no surge
	// lifts (drain.Drainer.WouldBlock). Such nodes are handed Target after
	// the others, so that the rollout moves on to nodes whose drains can
	// finish.
	DrainBlocked func(node string) string
}

// Decision is what the controller does now for one pool.
type Decision struct {
	// Hand are the nodes to give desiredConfig=Target now, in order.
	Hand []string
	// Waiting says why nodes that still need Target are not handed it (or
	// fewer than there is room for), for the pool's Updating condition.
	Waiting string
	// RequeueAfter is when the decision may change by time alone (a soak
	// ends, a window opens); 0 when only an event can change it.
	RequeueAfter time.Duration
	// Skipped are nodes that need Target but were passed over, and why.
	Skipped []NodeReason
	// Grant are the nodes whose reboot request is granted now (reboot.go);
	// Revoke those whose grant no longer answers a request.
	Grant, Revoke []string
	// Rollback are the nodes to hand Input.Previous: they broke an SLO
	// (slo.go).
	Rollback []string
}

// maxPauseText caps an administrator's pause text quoted in messages.
const maxPauseText = 256

// Next decides which nodes get the pool's Target now, and which nodes'
// reboot requests are granted with the room left (reboot.go).
func Next(in Input) Decision {
	d, stopped := sloDecision(in)
	if !stopped {
		d = nextConfig(in)
	}
	d.Revoke = staleGrants(in.Nodes)
	if stopped {
		return d
	}
	grantReboots(in, &d)
	return d
}

// nextConfig decides which nodes get the pool's Target now. It follows
// upstream's node controller (getAllCandidateMachines and
// updateCandidateMachines): nodes not yet told Target are candidates when
// ready; room is maxUnavailable less the unavailable nodes and the nodes
// failing Target; candidates go in zone and age order. nodeconfd adds, in
// this order, the health gate (a node rolled back from Target stops the
// rollout), the node pause annotation, maintenance windows and the soak.
func nextConfig(in Input) Decision {
	var needing []*corev1.Node
	for _, n := range in.Nodes {
		if n.Annotations[names.DesiredConfig] != in.Target {
			needing = append(needing, n)
		}
	}
	switch {
	case in.Target == "":
		// As upstream: an unrendered pool waits for its first render; an
		// empty desiredConfig must never be handed out.
		return Decision{Waiting: "pool has no rendered config yet"}
	case len(needing) == 0:
		return Decision{}
	case in.Pool.Spec.Paused:
		return Decision{Waiting: "pool is paused"}
	}
	if msg := healthGate(in.Nodes, in.Target); msg != "" {
		return Decision{Waiting: msg}
	}
	maxUnavail, err := MaxUnavailable(in.Pool, len(in.Nodes))
	if err != nil {
		return Decision{Waiting: err.Error() + "; the rollout stops until it is fixed"}
	}
	room, busy := capacity(in, maxUnavail)
	cands, skipped := candidates(needing, in.MCNs, in.DeferNode)
	d := Decision{Skipped: skipped}
	if room == 0 {
		d.Waiting = fmt.Sprintf("%d of %d nodes unavailable (maxUnavailable %d): %s",
			len(busy), len(in.Nodes), maxUnavail, joinReasons(busy))
		return d
	}
	if len(cands) == 0 {
		d.Waiting = fmt.Sprintf("no node that needs %s can take it now: %s", in.Target, joinReasons(skipped))
		return d
	}
	if d.Waiting, d.RequeueAfter = windowWait(in); d.Waiting != "" {
		return d
	}
	if d.Waiting, d.RequeueAfter = soakWait(in); d.Waiting != "" {
		return d
	}
	for _, n := range drainableFirst(cands, room, in.DrainBlocked, &d.Skipped) {
		d.Hand = append(d.Hand, n.Name)
	}
	if len(d.Hand) < room && len(skipped) > 0 {
		d.Waiting = fmt.Sprintf("%d more nodes could update but were passed over: %s", len(skipped), joinReasons(skipped))
	}
	return d
}

// healthGate stops the rollout when Target failed the health gate on a
// node of the pool (the daemon rolled it back and wrote failedConfig): the
// next node would most likely fail the same way. A failedConfig naming an
// older config does not stop a newer one, which may be the fix; nor does
// a report of a node no longer given Target (its daemon clears it): a
// failure counts only while the node that reported it still holds it, so
// a config an administrator rolls back to is not held by an old report.
func healthGate(nodes []*corev1.Node, target string) string {
	var failed []string
	for _, n := range nodes {
		if n.Annotations[names.FailedConfig] == target && n.Annotations[names.DesiredConfig] == target {
			failed = append(failed, n.Name)
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return fmt.Sprintf("%s failed the health gate on %s (annotation %s); the rollout stops until the pool's config changes or an administrator retries",
		target, strings.Join(failed, ", "), names.FailedConfig)
}

// capacity is how many more nodes may be handed Target, and the nodes
// that take the room: the unavailable ones and, as upstream, those already
// told Target whose daemon failed it (failingThisConfig), since a
// transient failure may clear and then they update too.
func capacity(in Input, maxUnavail int) (int, []NodeReason) {
	busy := unavailableNodes(in.Nodes, in.MCNs)
	for _, n := range in.Nodes {
		if n.Annotations[names.DesiredConfig] == in.Target && isFailing(n) {
			busy = append(busy, NodeReason{Node: n.Name, Reason: "failing " + in.Target + " (state " + n.Annotations[names.State] + ")"})
		}
	}
	return max(maxUnavail-len(busy), 0), busy
}

// candidates orders the nodes that need Target and may take it, and lists
// those passed over: not ready (as upstream), a fresh node whose daemon has
// not registered its MachineConfigNode yet (nothing would act on the config
// there, and the node would hold the room while it waits), paused by an
// administrator's annotation, or the controller's own node while it is not
// the last one (upstream's filterControlPlaneCandidateNodes).
func candidates(needing []*corev1.Node, mcns map[string]*mcfgv1.MachineConfigNode, deferNode string) ([]*corev1.Node, []NodeReason) {
	var cands []*corev1.Node
	var skipped []NodeReason
	for _, n := range needing {
		if r := notReady(n); r != "" {
			skipped = append(skipped, NodeReason{Node: n.Name, Reason: r})
			continue
		}
		if isFresh(n) && mcns[n.Name] == nil {
			skipped = append(skipped, NodeReason{Node: n.Name, Reason: "no MachineConfigNode yet (its daemon has not registered)"})
			continue
		}
		if v, ok := n.Annotations[names.PauseAnnotation]; ok {
			v = Clean(v, maxPauseText)
			skipped = append(skipped, NodeReason{Node: n.Name, Reason: fmt.Sprintf("paused by annotation %s=%q", names.PauseAnnotation, v)})
			continue
		}
		cands = append(cands, n)
	}
	if len(cands) > 1 {
		for i, n := range cands {
			if n.Name == deferNode {
				cands = append(cands[:i:i], cands[i+1:]...)
				skipped = append(skipped, NodeReason{Node: n.Name, Reason: "runs the controller and updates last"})
				break
			}
		}
	}
	sortNodes(cands)
	return cands, skipped
}

// forecastsAtMost bounds the drain forecasts one decision asks for beyond
// the room: each costs the API server a few LISTs.
const forecastsAtMost = 16

// drainableFirst picks up to room candidates, in order, those whose drain
// could finish before those whose drain could not (noted in skipped when
// passed over): a node that would wait for a PodDisruptionBudget must not
// hold the rollout's room while others could update. Only the first
// room+forecastsAtMost candidates are forecast; the rest count as
// drainable.
func drainableFirst(cands []*corev1.Node, room int, blocked func(string) string, skipped *[]NodeReason) []*corev1.Node {
	if blocked == nil {
		return cands[:min(room, len(cands))]
	}
	var ok, held []*corev1.Node
	var why []string
	for i, n := range cands {
		if len(ok) == room {
			break
		}
		if i >= room+forecastsAtMost {
			ok = append(ok, n)
			continue
		}
		if w := blocked(n.Name); w != "" {
			held, why = append(held, n), append(why, w)
			continue
		}
		ok = append(ok, n)
	}
	for i, n := range held {
		if len(ok) < room {
			ok = append(ok, n) // nothing better: it waits uncordoned on its node
			continue
		}
		*skipped = append(*skipped, NodeReason{Node: n.Name, Reason: "handed later: " + Clean(why[i], 200)})
	}
	return ok
}

// windowWait says when the next maintenance window opens, when none is
// open now.
func windowWait(in Input) (string, time.Duration) {
	st := in.Windows.At(in.Now)
	if st.Open {
		return "", 0
	}
	if st.Next.IsZero() {
		return "no maintenance window ever opens", 0
	}
	zone := time.UTC
	for _, w := range in.Windows {
		if w.Text == st.Window && w.Zone != nil {
			zone = w.Zone
		}
	}
	return fmt.Sprintf("maintenance window opens %s %s", st.Next.In(zone).Format("Mon 15:04"), zone), st.Next.Sub(in.Now)
}

// soakWait holds the next node until Soak has passed since the last node
// finished Target. A node that finished Target but whose MachineConfigNode
// does not say when holds the rollout too (until it does), since its soak
// cannot be known to be over.
func soakWait(in Input) (string, time.Duration) {
	if in.Soak <= 0 {
		return "", 0
	}
	var last time.Time
	var lastNode string
	for _, n := range in.Nodes {
		if !isUpdated(n, in.Target) {
			continue
		}
		t, ok := finishedAt(n, in.MCNs[n.Name], in.Target, in.Now)
		if !ok {
			return fmt.Sprintf("soak of %s: waiting for its MachineConfigNode to report Updated for %s", n.Name, in.Target), 0
		}
		if t.After(last) {
			last, lastNode = t, n.Name
		}
	}
	end := last.Add(in.Soak)
	if lastNode == "" || !in.Now.Before(end) {
		return "", 0
	}
	// The end, not the time left: a message that changed every second
	// would be a new status write at every reconcile of the soak.
	return fmt.Sprintf("next node at %s: soak of %s (%s)", end.UTC().Format(time.RFC3339), lastNode, in.Soak),
		end.Sub(in.Now)
}

func joinReasons(rs []NodeReason) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return joinCapped(s)
}

// Caps of the node texts a pool condition quotes: a pool of thousands of
// nodes, or a node writing long reasons, must not grow the pool's status
// past what the API server takes (then every status write would fail).
const (
	maxListed   = 10
	maxNodeText = 256
)

// joinCapped joins at most maxListed items, each cut at maxNodeText
// bytes (on a rune boundary), and counts the rest.
func joinCapped(items []string) string {
	out := make([]string, 0, min(len(items), maxListed)+1)
	for i, it := range items {
		if i == maxListed {
			out = append(out, fmt.Sprintf("and %d more", len(items)-maxListed))
			break
		}
		out = append(out, Clean(it, maxNodeText))
	}
	return strings.Join(out, ", ")
}

// Clean is text a node or a tenant wrote, made fit to quote in a status or
// an Event: valid UTF-8, every control and bidirectional-control character
// (a newline, an escape sequence, a right-to-left override that would
// make the text read otherwise) a space, cut at n bytes.
func Clean(s string, n int) string {
	if len(s) > 4*n {
		s = s[:4*n] // the cut below needs no more; the mapping need not see megabytes
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, " "))
	return cut(s, n)
}

// cut shortens s to at most n bytes without splitting a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
