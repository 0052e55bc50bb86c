package drain

import (
	"context"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/phases"
)

// podState is where one pod of a drain is.
type podState int

const (
	statePending     podState = iota // to be evicted
	stateEvicting                    // eviction request in flight
	stateRetrying                    // eviction refused; retried after a delay
	stateTerminating                 // eviction accepted; the pod has not gone yet
	stateGone                        // deleted, or replaced by a new pod of the same name
)

// tracked is one pod the drain evicts, identified by UID.
type tracked struct {
	pod      *corev1.Pod // as last seen
	state    podState
	attempts int
	// last marks a pod the drain evicts after all the others are gone
	// (Drainer.Last).
	last bool
	// refusal is why the last eviction was refused ("" once accepted);
	// byBudget marks a refusal by a PodDisruptionBudget.
	refusal  string
	byBudget bool
}

type evictResult struct {
	uid types.UID
	out outcome
	why string
}

// run is one drain's state. Only the loop's goroutine touches it; eviction
// requests and retry timers report back on channels.
type run struct {
	d *Drainer
	// ctx ends with the drain; the retry timers give up then.
	ctx   context.Context
	start time.Time
	pods  map[types.UID]*tracked
	// byKey maps namespace/name to the UID of the tracked pod of that name.
	byKey map[string]types.UID
	queue []types.UID
	// later are the pods evicted last, queued once firstLeft is 0: the
	// other pods not yet gone.
	later     []types.UID
	firstLeft int
	inFlight  int
	results   chan evictResult
	retries   chan types.UID

	left, evicted, skipped int
	refused                int // pods whose last eviction was refused
	blockedSince           time.Time
	blocked                time.Duration
	// reported is the Blocking part of the last progress message, and
	// reportedAt when it was sent.
	reported   string
	reportedAt time.Time
	// rv is the resourceVersion of the last watch event: a watch that
	// ends is resumed from there.
	rv string
	// budgets caches the PodDisruptionBudgets of the namespaces of pods a
	// budget refuses, for the progress messages.
	budgets map[string]budgetList
	log     *zap.Logger
	// arrived are pods that came to the node during the drain; they are
	// left alone (only a pod that tolerates the cordon or names the node
	// can arrive) and logged once.
	arrived map[types.UID]bool
	// surges by owner (ownerKey); surgesInFlight counts their requests
	// under way, which report on surgeResults and surgeLowered; surged
	// names every surge made, for the result.
	surges         map[string]*surgeState
	surgeResults   chan surgeResult
	surgeLowered   chan loweredResult
	surgesInFlight int
	surged         []string
}

func newRun(d *Drainer, sel Selection, start time.Time, log *zap.Logger) *run {
	r := &run{d: d, start: start, pods: map[types.UID]*tracked{}, byKey: map[string]types.UID{},
		results: make(chan evictResult), retries: make(chan types.UID), skipped: sel.Skipped,
		arrived: map[types.UID]bool{}, budgets: map[string]budgetList{}, log: log,
		surges: map[string]*surgeState{}, surgeResults: make(chan surgeResult), surgeLowered: make(chan loweredResult)}
	for _, p := range sel.Evict {
		t := &tracked{pod: p, last: d.Last != nil && d.Last.Matches(labels.Set(p.Labels))}
		r.pods[p.UID] = t
		r.byKey[podName(p)] = p.UID
		r.left++
		if !t.last {
			r.firstLeft++
		}
		switch {
		case p.DeletionTimestamp != nil:
			t.state = stateTerminating // being deleted already: only wait
		case t.last:
			r.later = append(r.later, p.UID)
		default:
			r.queue = append(r.queue, p.UID)
		}
	}
	return r
}

func (r *run) done() bool { return r.left == 0 }

func (r *run) concurrency() int {
	if r.d.Concurrency > 0 {
		return r.d.Concurrency
	}
	return DefaultConcurrency
}

// startEvictions starts queued evictions up to the concurrency bound; the
// pods evicted last join the queue once every other pod is gone.
func (r *run) startEvictions() {
	ctx := r.ctx
	if r.firstLeft == 0 && len(r.later) > 0 {
		r.log.Info("Every other pod is gone; evicting the pods the drain takes last", zap.Int("pods", len(r.later)))
		r.queue, r.later = append(r.queue, r.later...), nil
	}
	for len(r.queue) > 0 && r.inFlight < r.concurrency() {
		uid := r.queue[0]
		r.queue = r.queue[1:]
		t := r.pods[uid]
		if t.state != statePending {
			continue
		}
		t.state = stateEvicting
		t.attempts++
		r.inFlight++
		pod := t.pod
		go func() {
			out, why := r.d.evict(ctx, pod)
			select {
			case r.results <- evictResult{uid: pod.UID, out: out, why: why}:
			case <-ctx.Done():
			}
		}()
	}
}

func (r *run) onEvicted(res evictResult) {
	r.inFlight--
	t := r.pods[res.uid]
	out, why := res.out, res.why
	switch out {
	case outcomeAccepted:
		r.evicted++
		if r.d.Fault != nil {
			r.d.Fault("drain-evicted")
		}
		r.setRefusal(t, "", false)
		if t.state == stateEvicting {
			t.state = stateTerminating
		}
		r.lowerWhenEvicted(ownerKey(t.pod))
	case outcomeGone:
		r.setRefusal(t, "", false)
		r.gone(t)
	default:
		if t.state != stateEvicting {
			return
		}
		if why != t.refusal {
			r.log.Info("Eviction refused; retrying", zap.String("pod", podName(t.pod)), zap.String("why", why))
		}
		r.setRefusal(t, why, out == outcomeBudget)
		t.state = stateRetrying
		if out == outcomeBudget {
			r.maybeSurge(t)
		}
		delay := min(retryFirst<<min(t.attempts-1, 8), retryMax)
		uid := res.uid
		time.AfterFunc(delay, func() {
			select {
			case r.retries <- uid:
			case <-r.ctx.Done():
			}
		})
	}
}

func (r *run) onRetry(uid types.UID) {
	if t := r.pods[uid]; t.state == stateRetrying {
		t.state = statePending
		r.queue = append(r.queue, uid)
	}
}

// setRefusal records why a pod's eviction is refused and sums up the time
// during which any eviction stood refused.
func (r *run) setRefusal(t *tracked, why string, byBudget bool) {
	was := t.refusal != ""
	t.refusal, t.byBudget = why, byBudget
	switch is := why != ""; {
	case is && !was:
		if r.refused == 0 {
			r.blockedSince = time.Now()
		}
		r.refused++
	case !is && was:
		r.refused--
		if r.refused == 0 {
			r.blocked += time.Since(r.blockedSince)
		}
	}
}

func (r *run) gone(t *tracked) {
	if t.state == stateGone {
		return
	}
	r.setRefusal(t, "", false)
	t.state = stateGone
	r.left--
	if !t.last {
		r.firstLeft--
	}
	r.lowerWhenEvicted(ownerKey(t.pod))
}

// onEvent follows the watch: a tracked pod is gone when it is deleted, or
// when a pod of the same name but another UID shows up (a StatefulSet
// recreated it).
func (r *run) onEvent(ev watch.Event) {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	r.rv = pod.ResourceVersion
	if ev.Type == watch.Bookmark {
		return // only a resourceVersion
	}
	key := podName(pod)
	uid, known := r.byKey[key]
	t := r.pods[uid]
	switch {
	case known && uid == pod.UID && ev.Type == watch.Deleted:
		r.gone(t)
	case known && uid == pod.UID:
		t.pod = pod
	case ev.Type != watch.Deleted:
		if known {
			r.gone(t)
		}
		if !r.arrived[pod.UID] {
			r.arrived[pod.UID] = true
			r.log.Info("Pod arrived on the node during the drain; left in place", zap.String("pod", key),
				zap.String("uid", string(pod.UID)))
		}
	}
}

// onList marks gone every tracked pod a fresh list no longer has.
func (r *run) onList(items []corev1.Pod) {
	have := map[types.UID]*corev1.Pod{}
	for i := range items {
		have[items[i].UID] = &items[i]
	}
	for uid, t := range r.pods {
		if p, ok := have[uid]; ok {
			t.pod = p
		} else {
			r.gone(t)
		}
	}
}

func (r *run) result() phases.DrainResult {
	blocked := r.blocked
	if r.refused > 0 {
		blocked += time.Since(r.blockedSince)
	}
	return phases.DrainResult{Evicted: r.evicted, Skipped: r.skipped, Took: time.Since(r.start), Blocked: blocked,
		Surged: r.surged}
}
