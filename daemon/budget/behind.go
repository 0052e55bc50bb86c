package budget

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/nodeconfd/nodeconfd/phases"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// listFrom reads all the budget's Leases (slots and queue entries) at
// resourceVersion rv or later (from the API server's watch cache), or, with
// rv empty, as they are now. rv is the latest version this daemon knows of:
// its own last write, or the event that sent it to look again; so the list
// shows its own entry and all that came before.
func (b *Budget) listFrom(ctx context.Context, rv string) (map[string]*coordinationv1.Lease, string, error) {
	return b.listWith(ctx, notOlderThan(labels.Set{Label: b.cfg.Name}.String(), rv))
}

// notOlderThan selects by sel, at resourceVersion rv or later (from the
// API server's watch cache); with rv empty, as they are now.
func notOlderThan(sel, rv string) metav1.ListOptions {
	opts := metav1.ListOptions{LabelSelector: sel}
	if rv != "" {
		opts.ResourceVersion, opts.ResourceVersionMatch = rv, metav1.ResourceVersionMatchNotOlderThan
	}
	return opts
}

// waitBehind waits, outside the head of the queue, until the entry target
// goes (its waiter took a slot, or left) or expires (its daemon died): one
// watch of that entry alone, from rv, so the waiter hears of nothing else.
// Meanwhile it renews the node's own entry. An entry that is renewed but
// never takes its turn (its daemon stuck, or a compromised node's) is
// skipped by the head; the waiter learns of it when the entry next, the
// one right behind target, is gone while target is renewed (movedPast).
// It returns the version to list from next.
func (b *Budget) waitBehind(ctx context.Context, q *queueEntry, target *coordinationv1.Lease, next, rv string,
	w *watched, dead expiries) (string, error) {
	if w.name != target.Name {
		*w = watched{name: target.Name}
	}
	w.saw(target.ResourceVersion, entryDurationOf(target, b.cfg.EntryDuration), entryExpires(target, b.cfg.EntryDuration), time.Now())
	var ch watch.Interface
	defer func() {
		if ch != nil {
			ch.Stop()
		}
	}()
	var closedAt time.Time
	for {
		if ch == nil {
			if err := phases.Sleep(ctx, time.Until(closedAt.Add(time.Second))); err != nil {
				return "", err
			}
			var err error
			ch, err = b.watchEntry(ctx, target.Name, rv)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return rv, nil // too old to resume: look again
			}
			if err != nil {
				return "", err
			}
		}
		t := time.NewTimer(time.Until(earliest(w.expiry(), q.renewDue())) + 10*time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-t.C:
			if !time.Now().Before(w.expiry()) {
				dead.note(w.name, w.version)
				b.cfg.Log.Info("Queue entry ahead expired (its daemon stopped renewing it); skipping it",
					zap.String("lease", w.name))
				return rv, nil
			}
			if err := q.touch(ctx); err != nil {
				return "", err
			}
		case ev, ok := <-ch.ResultChan():
			t.Stop()
			if !ok {
				ch.Stop()
				ch, closedAt = nil, time.Now()
				continue
			}
			evRV, gone, resume := b.onEntryEvent(ev, w, time.Now())
			rv = laterRV(rv, evRV)
			if gone || ev.Type == watch.Modified && b.movedPast(ctx, next, w) {
				return rv, nil
			}
			if resume {
				ch.Stop()
				ch, closedAt = nil, time.Now()
			}
		}
	}
}

// movedPast reports whether the queue moved past the watched entry while
// its holder kept it alive: the entry next, right behind it, is gone (it
// took a slot, or left). A GET of one Lease, at most once per TurnGrace,
// when the watched entry changes (a renewal: every EntryDuration/3).
func (b *Budget) movedPast(ctx context.Context, next string, w *watched) bool {
	if next == "" || time.Since(w.checked) < b.cfg.TurnGrace {
		return false
	}
	w.checked = time.Now()
	_, err := b.cfg.Client.Leases(b.cfg.Namespace).Get(ctx, next, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return false // there, or unknown: the watch goes on
	}
	b.cfg.Log.Info("The queue moved past the entry ahead, renewed but not taking its turn; finding the node's place again",
		zap.String("lease", w.name), zap.String("gone", next))
	return true
}

// onEntryEvent applies an event of the watched entry: it returns the
// event's version, whether the entry is gone (look again), and whether the
// watch ended with an error (resume it).
func (b *Budget) onEntryEvent(ev watch.Event, w *watched, now time.Time) (rv string, gone, resume bool) {
	if ev.Type == watch.Error {
		st, isStatus := ev.Object.(*metav1.Status)
		if isStatus && (st.Code == http.StatusGone || st.Reason == metav1.StatusReasonExpired || st.Reason == metav1.StatusReasonGone) {
			return "", true, false
		}
		return "", false, true
	}
	l, isLease := ev.Object.(*coordinationv1.Lease)
	if !isLease {
		return "", false, false
	}
	switch ev.Type {
	case watch.Added, watch.Modified:
		w.saw(l.ResourceVersion, entryDurationOf(l, b.cfg.EntryDuration), entryExpires(l, b.cfg.EntryDuration), now)
	case watch.Deleted:
		return l.ResourceVersion, true, false
	}
	return l.ResourceVersion, false, false
}

// watchEntry watches the one Lease name from rv.
func (b *Budget) watchEntry(ctx context.Context, name, rv string) (watch.Interface, error) {
	w, err := b.cfg.Client.Leases(b.cfg.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: rv,
		AllowWatchBookmarks: true, TimeoutSeconds: watchTimeout(),
	})
	if err != nil {
		return nil, fmt.Errorf("watching queue entry %s/%s of disruption budget %s: %w", b.cfg.Namespace, name, b.cfg.Name, err)
	}
	return w, nil
}
