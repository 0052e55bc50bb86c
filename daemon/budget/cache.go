package budget

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/nodeconfd/nodeconfd/phases"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// leases is a waiting daemon's copy of the budget's Leases (slots and
// queue entries): one list, then one watch resumed from the last
// resourceVersion seen, so waiting costs no request per change. Only a
// watch the API server can no longer resume (410 Gone) lists again.
type leases struct {
	b     *Budget
	items map[string]*coordinationv1.Lease
	rv    string
	w     watch.Interface
	// closedAt is when the last watch ended without an event: a server that
	// closes watches at once is not asked again straight away.
	closedAt time.Time
}

// watchTimeout is the watch's timeout: in [30, 60) minutes, the API
// server's own choice for watches that name none.
func watchTimeout() *int64 {
	s := int64(30*60 + rand.IntN(30*60))
	return &s
}

// followLeases starts from the Leases found at version rv; the watch
// starts at the first wait (a node that takes a slot at once needs none).
func (b *Budget) followLeases(found map[string]*coordinationv1.Lease, rv string) *leases {
	return &leases{b: b, items: found, rv: rv}
}

func (c *leases) selector() string { return labels.Set{Label: c.b.cfg.Name}.String() }

func (c *leases) relist(ctx context.Context) error {
	found, rv, err := c.b.listWith(ctx, metav1.ListOptions{LabelSelector: c.selector()})
	if err != nil {
		return err
	}
	c.items, c.rv = found, rv
	return c.rewatch(ctx)
}

// rewatch (re)starts the watch from c.rv.
func (c *leases) rewatch(ctx context.Context) error {
	if c.w != nil {
		c.w.Stop()
		c.w = nil
	}
	w, err := c.b.cfg.Client.Leases(c.b.cfg.Namespace).Watch(ctx, metav1.ListOptions{
		LabelSelector: c.selector(), ResourceVersion: c.rv, AllowWatchBookmarks: true, TimeoutSeconds: watchTimeout(),
	})
	if err != nil {
		return fmt.Errorf("watching the Leases of disruption budget %s: %w", c.b.cfg.Name, err)
	}
	c.w = w
	return nil
}

// stop ends the watch.
func (c *leases) stop() {
	if c.w != nil {
		c.w.Stop()
		c.w = nil
	}
}

// next waits for a change of the Leases (and applies it, with the changes
// that came with it) or until until, whichever comes first.
func (c *leases) next(ctx context.Context, until time.Time) error {
	var timeout <-chan time.Time
	if !until.IsZero() {
		// A little past, so that the next look sees the expiry.
		t := time.NewTimer(time.Until(until) + 10*time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	if c.w == nil {
		if err := c.resume(ctx); err != nil {
			return err
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
		return nil
	case ev, ok := <-c.w.ResultChan():
		if err := c.apply(ctx, ev, ok); err != nil {
			return err
		}
	}
	// Take what else has come already, so that a burst is one look.
	for c.w != nil {
		select {
		case ev, ok := <-c.w.ResultChan():
			if err := c.apply(ctx, ev, ok); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// apply applies one watch event; !ok means the watch ended.
func (c *leases) apply(ctx context.Context, ev watch.Event, ok bool) error {
	if !ok {
		c.b.cfg.Log.Debug("Watch of the disruption budget's Leases ended; resuming", zap.String("resourceVersion", c.rv))
		c.w.Stop()
		c.w = nil
		c.closedAt = time.Now()
		return nil
	}
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		l, isLease := ev.Object.(*coordinationv1.Lease)
		if !isLease {
			return nil
		}
		c.rv = l.ResourceVersion
		switch ev.Type {
		case watch.Added, watch.Modified:
			c.items[l.Name] = l
		case watch.Deleted:
			delete(c.items, l.Name)
		}
	case watch.Error:
		c.w.Stop()
		c.w = nil
		st, isStatus := ev.Object.(*metav1.Status)
		if isStatus {
			c.b.cfg.Log.Debug("Watch of the disruption budget's Leases ended with an error", zap.String("reason", string(st.Reason)),
				zap.Int32("code", st.Code), zap.String("message", st.Message))
		}
		if isStatus && (st.Code == http.StatusGone || st.Reason == metav1.StatusReasonExpired || st.Reason == metav1.StatusReasonGone) {
			return c.relist(ctx)
		}
		c.closedAt = time.Now()
	}
	return nil
}

// resume restarts an ended watch from the last version seen, a second
// after the last one ended at the earliest; a version too old to resume
// from lists again.
func (c *leases) resume(ctx context.Context) error {
	if wait := time.Until(c.closedAt.Add(time.Second)); wait > 0 {
		if err := phases.Sleep(ctx, wait); err != nil {
			return err
		}
	}
	err := c.rewatch(ctx)
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return c.relist(ctx)
	}
	return err
}
