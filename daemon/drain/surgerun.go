package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeconfd/nodeconfd/cluster/surge"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// surgeRetry is how long a drain waits before it asks again to surge a
// workload it could not (refused, the cap reached, an error): an
// administrator may remove the autoscaler, another surge may end.
const surgeRetry = 30 * time.Second

// surgeTimeout bounds one surge's requests, which run on after the drain's
// context ends: a surge started is always either recorded or undone.
const surgeTimeout = 30 * time.Second

// surgeState is a drain's surge of one pod owner (ReplicaSet or
// StatefulSet, by ownerKey).
type surgeState struct {
	starting, lowering bool
	rec                *surge.Record
	// refusal is why the owner is not surged ("" when it did not opt in
	// or is surged); retryAt when to ask again.
	refusal string
	retryAt time.Time
}

type surgeResult struct {
	key     string
	rec     *surge.Record
	refusal string
	err     error
}

// ownerKey is the pod's controller, as kind/namespace/name ("" when none).
func ownerKey(p *corev1.Pod) string {
	c := metav1.GetControllerOf(p)
	if c == nil {
		return ""
	}
	return c.Kind + "/" + p.Namespace + "/" + c.Name
}

// maybeSurge starts a surge of the owner of a pod a budget refused, unless
// surges are off, one is under way or ended, or a refusal is recent.
func (r *run) maybeSurge(t *tracked) {
	key := ownerKey(t.pod)
	if r.d.Surge.Max <= 0 || key == "" {
		return
	}
	st := r.surges[key]
	if st == nil {
		st = &surgeState{}
		r.surges[key] = st
	}
	if st.starting || st.rec != nil || st.lowering || time.Now().Before(st.retryAt) {
		return
	}
	st.starting = true
	r.surgesInFlight++
	pod := t.pod
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), surgeTimeout)
		defer cancel()
		rec, why, err := r.d.raise(ctx, pod)
		r.surgeResults <- surgeResult{key: key, rec: rec, refusal: why, err: err}
	}()
}

// onSurge takes a surge's outcome in.
func (r *run) onSurge(res surgeResult) {
	r.surgesInFlight--
	st := r.surges[res.key]
	st.starting = false
	switch {
	case errors.Is(res.err, errSurgeCap):
		st.refusal, st.retryAt = res.err.Error(), time.Now().Add(surgeRetry)
	case res.err != nil:
		r.log.Warn("Surge failed; the eviction is retried without it", zap.String("owner", res.key), zap.Error(res.err))
		r.d.surgeCount("failed")
		st.refusal, st.retryAt = "surge failed: "+res.err.Error(), time.Now().Add(surgeRetry)
	case res.refusal != "":
		if st.refusal != res.refusal {
			r.log.Info("Surge refused", zap.String("owner", res.key), zap.String("why", res.refusal))
			r.d.surgeCount("refused")
		}
		st.refusal, st.retryAt = res.refusal, time.Now().Add(surgeRetry)
	case res.rec == nil:
		st.refusal, st.retryAt = "", time.Now().Add(surgeRetry) // not opted in
	default:
		rec := *res.rec
		st.rec, st.refusal = &rec, ""
		r.log.Info("Surged a workload to evict its pod without breaking its budget",
			zap.String("workload", rec.Workload.String()), zap.Int32("from", rec.From), zap.Int32("to", rec.To),
			zap.String("slot", rec.Lease))
		r.d.surgeEvent(rec.Workload, false, "DrainSurge", "Raised the replicas of "+rec.Workload.String()+
			" by one to evict its pod from node "+r.d.NodeName+" without breaking its PodDisruptionBudget; they go back once it is evicted")
		r.d.surgeCount("raised")
		r.surged = append(r.surged, rec.String())
		r.lowerWhenEvicted(res.key)
	}
}

// lowerWhenEvicted puts a surge back once no pod of its owner waits for an
// eviction any more (each is terminating or gone).
func (r *run) lowerWhenEvicted(key string) {
	st := r.surges[key]
	if st == nil || st.rec == nil || st.lowering {
		return
	}
	for _, t := range r.pods {
		if t.state != stateTerminating && t.state != stateGone && ownerKey(t.pod) == key {
			return
		}
	}
	st.lowering = true
	rec := *st.rec
	r.surgesInFlight++
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), surgeTimeout)
		defer cancel()
		err := r.d.endSurge(ctx, r.log, rec)
		r.surgeLowered <- loweredResult{key: key, err: err}
	}()
}

type loweredResult struct {
	key string
	err error
}

func (r *run) onLowered(res loweredResult) {
	r.surgesInFlight--
	st := r.surges[res.key]
	st.lowering = false
	if res.err == nil {
		st.rec = nil
	}
}

// endSurges ends the drain's surges: it waits for those in flight, then
// lowers every one still raised (RestoreSurges retries one that fails).
func (r *run) endSurges(ctx context.Context) {
	for r.surgesInFlight > 0 {
		select {
		case res := <-r.surgeResults:
			r.onSurge(res)
		case res := <-r.surgeLowered:
			r.onLowered(res)
		}
	}
	for _, st := range r.surges {
		if st.rec == nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, surgeTimeout)
		_ = r.d.endSurge(lctx, r.log, *st.rec)
		cancel()
		st.rec = nil
	}
}

// surgeNote is what a budget-refused pod's progress message adds about
// its owner's surge.
func (r *run) surgeNote(p *corev1.Pod) string {
	st := r.surges[ownerKey(p)]
	switch {
	case st == nil:
		return ""
	case st.rec != nil:
		return "; surged " + st.rec.Workload.String() + fmt.Sprintf(" to %d replicas, waiting for the new pod to be Ready", st.rec.To)
	case st.refusal != "":
		return "; cannot surge: " + st.refusal
	}
	return ""
}
