// Package drain cordons, drains and uncordons the daemon's node on
// client-go. A cordon carries an annotation so that an uncordon never lifts
// an administrator's cordon. A drain evicts the node's pods through the
// Eviction API (PodDisruptionBudgets respected; DaemonSet and mirror pods
// left in place; pods without a controller only when allowed), a bounded
// number at a time, retries refused evictions with backoff, and waits for
// the pods to go with one watch, telling pods apart by UID. While it runs it
// reports which pods block it and why.
//
// A drain ends early when its context is cancelled: the Drain phase does so
// on the daemon's shutdown and when the node's desired config changes (a
// rollback), so a drain blocked by a PodDisruptionBudget never holds up
// either.
package drain

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/phases"
)

// ReportEvery is the shortest interval between two progress reports. A
// report is sent when what the drain waits on changed; while it stays the
// same, only every RefreshEvery (to refresh the elapsed time it shows).
const (
	ReportEvery  = 3 * time.Second
	RefreshEvery = 30 * time.Second
)

// DefaultConcurrency bounds the evictions in flight: enough for a node of
// 100 pods to drain in about a second, few enough to stay well inside the
// API server's priority-and-fairness share of one client.
const DefaultConcurrency = 16

// Retry delays of a refused eviction: doubling from retryFirst to retryMax.
const (
	retryFirst = time.Second
	retryMax   = 5 * time.Second
)

// Drainer cordons and drains one node.
type Drainer struct {
	Client   kubeapi.API
	NodeName string
	// Timeout is how long a drain may take before it is reported blocked
	// (once per timeout period) or, with FailOnTimeout, given up; 0 means
	// no limit.
	Timeout       time.Duration
	FailOnTimeout bool
	// EvictUnowned allows evicting pods that no controller will recreate.
	EvictUnowned bool
	// Concurrency bounds the evictions in flight; 0 means DefaultConcurrency.
	Concurrency int
	// Last, when set, selects the pods evicted only once every other pod
	// of the drain is gone (--drain-last-selector: a storage manager that
	// the other pods need until they stop).
	Last labels.Selector
	// Surge, when its Max is above 0, raises an opted-in workload's
	// replicas by one where a PodDisruptionBudget refuses an eviction.
	Surge SurgeOptions
	Log   *zap.Logger
	// Fault, when set, is the test-only fault-point hook (package
	// daemon/faultpoint), told of each accepted eviction.
	Fault func(point string)
}

// Drain evicts every pod of the node that Select picks and waits until they
// are gone. It reports progress while it runs (the first report after
// ReportEvery), and past its timeout either reports the drain blocked once
// per timeout period or, with FailOnTimeout, gives up with an error wrapping
// phases.ErrDrainTimedOut.
func (d *Drainer) Drain(ctx context.Context, progress phases.DrainProgress) (phases.DrainResult, error) {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	list, err := d.listPods(ctx)
	if err != nil {
		return phases.DrainResult{}, err
	}
	sel, err := Select(podPointers(list.Items), d.EvictUnowned)
	if err != nil {
		return phases.DrainResult{Skipped: sel.Skipped}, err
	}
	log := d.logger(ctx)
	if err := d.RestoreSurges(ctx); err != nil {
		log.Warn("Surges left behind not all put back; retried at the next drain", zap.Error(err))
	}
	log.Info("Draining node", zap.Int("pods", len(sel.Evict)), zap.Int("leftInPlace", sel.Skipped))
	r := newRun(d, sel, start, log)
	if len(sel.Evict) > 0 {
		err := r.loop(ctx, progress, list.ResourceVersion)
		// Surges end with the drain, whatever ended it.
		r.endSurges(context.WithoutCancel(ctx))
		if err != nil {
			return r.result(), err
		}
	}
	res := r.result()
	log.Info("Drained node", zap.Int("evicted", res.Evicted), zap.Duration("took", res.Took),
		zap.Duration("blocked", res.Blocked))
	return res, nil
}

// logger is the logger of the phase that called (node, config and phase
// fields), else the drainer's own with the node.
func (d *Drainer) logger(ctx context.Context) *zap.Logger {
	if l := phases.LogFrom(ctx, nil); l != nil {
		return l.Named("drain")
	}
	if d.Log == nil {
		return zap.NewNop()
	}
	return d.Log.With(zap.String("node", d.NodeName))
}

// CheckDrain lists the node's pods and runs Select on them, without evicting
// anything: the update calls it before it cordons, so that pods that would make the drain fail (pods without a
// controller) fail the update while the node is still untouched.
func (d *Drainer) CheckDrain(ctx context.Context) error {
	list, err := d.listPods(ctx)
	if err != nil {
		return err
	}
	_, err = Select(podPointers(list.Items), d.EvictUnowned)
	return err
}

// podPointers points at each pod of a list.
func podPointers(items []corev1.Pod) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(items))
	for i := range items {
		pods[i] = &items[i]
	}
	return pods
}

func (d *Drainer) podSelector() string { return kube.NodePodsSelector(d.NodeName) }

func (d *Drainer) listPods(ctx context.Context) (*corev1.PodList, error) {
	all := &corev1.PodList{}
	rv, err := kubeapi.Pages(ctx, d.Client.Pods(metav1.NamespaceAll).List, metav1.ListOptions{FieldSelector: d.podSelector()},
		"pods on node "+d.NodeName, kube.MaxNodePods, func(l *corev1.PodList) error {
			all.Items = append(all.Items, l.Items...)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", d.NodeName, err)
	}
	all.ResourceVersion = rv
	return all, nil
}

func (d *Drainer) watchPods(ctx context.Context, rv string) (watch.Interface, error) {
	w, err := d.Client.Pods(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{
		FieldSelector: d.podSelector(), ResourceVersion: rv})
	if err != nil {
		return nil, fmt.Errorf("watching the pods of node %s: %w", d.NodeName, err)
	}
	return w, nil
}

// loop runs evictions and follows the pods until every one is gone. A pod
// watch that ends or fails is reopened (after a pause, with backoff while
// the API server cannot be reached) while evictions and reports go on.
func (r *run) loop(ctx context.Context, progress phases.DrainProgress, rv string) error {
	r.ctx, r.rv = ctx, rv
	w, err := r.d.watchPods(ctx, rv)
	if err != nil {
		return err
	}
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	events := w.ResultChan()
	watchedAt := time.Now()
	var (
		reopen  <-chan time.Time // set while the watch is down
		expired bool             // the watch's resourceVersion expired: list again
		backoff time.Duration
	)
	ticker := time.NewTicker(ReportEvery)
	defer ticker.Stop()
	var timeout <-chan time.Time
	if r.d.Timeout > 0 {
		timer := time.NewTicker(r.d.Timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	for !r.done() {
		r.startEvictions()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case res := <-r.results:
			r.onEvicted(res)
		case uid := <-r.retries:
			r.onRetry(uid)
		case res := <-r.surgeResults:
			r.onSurge(res)
		case res := <-r.surgeLowered:
			r.onLowered(res)
		case ev, ok := <-events:
			if ok && ev.Type != watch.Error {
				r.onEvent(ev)
				continue
			}
			w.Stop()
			w, events = nil, nil
			expired = ok
			if ok {
				// An error event (410 Gone: the resourceVersion expired).
				r.log.Debug("Pod watch failed; listing the pods again", zap.Error(apierrors.FromObject(ev.Object)))
			}
			// A watch that ended within a second of its start is reopened
			// only a second later, so a server that closes watches at once
			// is not hammered.
			reopen = time.After(time.Until(watchedAt.Add(time.Second)))
		case <-reopen:
			reopen = nil
			if w, err = r.reopen(ctx, expired); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				backoff = min(max(2*backoff, time.Second), 15*time.Second)
				r.log.Info("Pod watch could not be reopened; retrying", zap.Duration("in", backoff), zap.Error(err))
				reopen = time.After(backoff)
				continue
			}
			events, watchedAt, backoff = w.ResultChan(), time.Now(), 0
		case <-ticker.C:
			r.report(ctx, progress, time.Now())
		case <-timeout:
			if err := r.timedOut(ctx, progress); err != nil {
				return err
			}
		}
	}
	return nil
}

// reopen starts the pod watch again: from the last resourceVersion seen,
// or, when that has expired, from a new list.
func (r *run) reopen(ctx context.Context, expired bool) (watch.Interface, error) {
	if expired {
		return r.resync(ctx)
	}
	w, err := r.d.watchPods(ctx, r.rv)
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return r.resync(ctx)
	}
	return w, err
}

// resync lists the node's pods again (the pods not listed are gone) and
// starts a new watch.
func (r *run) resync(ctx context.Context) (watch.Interface, error) {
	list, err := r.d.listPods(ctx)
	if err != nil {
		return nil, err
	}
	r.onList(list.Items)
	r.rv = list.ResourceVersion
	return r.d.watchPods(ctx, list.ResourceVersion)
}

// report shows the drain's progress when what it waits on changed since the
// last report, or (to refresh its times) when that report is RefreshEvery
// old. The times alone never count as a change: a blocked drain would
// otherwise rewrite the status at every tick.
func (r *run) report(ctx context.Context, progress phases.DrainProgress, now time.Time) {
	view := r.view(ctx, now)
	if key := view.Blocking(); key != r.reported || now.Sub(r.reportedAt) >= RefreshEvery {
		progress.Progress(view.String())
		r.reported, r.reportedAt = key, now
	}
}

// timedOut applies the timeout policy at the end of each timeout period:
// give up (FailOnTimeout), or say the drain is blocked and on what.
func (r *run) timedOut(ctx context.Context, progress phases.DrainProgress) error {
	now := time.Now()
	view := r.view(ctx, now)
	log := r.log.With(zap.Duration("timeout", r.d.Timeout))
	if r.d.FailOnTimeout {
		blocking := view.Blocking()
		log.Warn("Drain timed out; giving up", zap.String("blocking", blocking))
		return fmt.Errorf("%w after %s: %s", phases.ErrDrainTimedOut, r.d.Timeout, blocking)
	}
	msg := view.String()
	log.Warn("Drain blocked past its timeout; still retrying", zap.String("blocking", msg))
	progress.Blocked(msg)
	r.reported, r.reportedAt = view.Blocking(), now
	return nil
}
