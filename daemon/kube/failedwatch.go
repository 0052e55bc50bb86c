package kube

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/phases"
)

// failedWatchRetry is the pause before a failed LIST or WATCH of the
// failing nodes is tried again.
const failedWatchRetry = 5 * time.Second

// WaitNotFailedOn blocks until no other node's failedConfig annotation is
// config (that node passed it after a retry, an administrator removed the
// annotation, or the node is gone) or ctx ends. It LISTs the Nodes
// labelled with config's hash once, then WATCHes them from there (no
// polling; a re-watch resumes from the last resourceVersion seen, a LIST
// again only when the API server no longer has it). failedOn is called
// with a node that records the failure each time that node changes.
func (c *Client) WaitNotFailedOn(ctx context.Context, config string, failedOn func(node string)) error {
	sel := failedConfigSelector(config)
	last := ""
	for {
		failed := map[string]bool{}
		rv, err := kubeapi.Pages(ctx, c.API.Nodes().List, metav1.ListOptions{LabelSelector: sel}, "nodes", 0,
			func(l *corev1.NodeList) error {
				for i := range l.Items {
					if c.failedHere(&l.Items[i], config) {
						failed[l.Items[i].Name] = true
					}
				}
				return nil
			})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := phases.Sleep(ctx, failedWatchRetry); err != nil {
				return err
			}
			continue
		}
		for {
			if len(failed) == 0 {
				return nil
			}
			if first := slices.Min(slices.Collect(maps.Keys(failed))); first != last && !failed[last] {
				last = first
				failedOn(first)
			}
			var relist bool
			rv, relist, err = c.followFailed(ctx, sel, rv, config, failed)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if relist || err != nil {
				if err := phases.Sleep(ctx, failedWatchRetry); err != nil {
					return err
				}
				break
			}
		}
	}
}

// followFailed watches the selected Nodes from rv and keeps failed up to
// date until the set is empty or the watch ends; it returns the last
// resourceVersion seen, and relist when rv is too old to resume from.
func (c *Client) followFailed(ctx context.Context, sel, rv, config string, failed map[string]bool) (string, bool, error) {
	w, err := c.API.Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv,
		AllowWatchBookmarks: true, TimeoutSeconds: watchTimeout()})
	if err != nil {
		return rv, apierrors.IsGone(err) || apierrors.IsResourceExpired(err), fmt.Errorf("watching nodes labelled %s: %w", sel, err)
	}
	defer w.Stop()
	for len(failed) > 0 {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return rv, false, ctx.Err()
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return rv, false, nil // the watch timed out: resume from rv
		}
		if ev.Type == watch.Error {
			st := apierrors.FromObject(ev.Object)
			if se, isStatus := st.(*apierrors.StatusError); isStatus && se.ErrStatus.Code == http.StatusGone {
				return rv, true, nil
			}
			return rv, true, fmt.Errorf("watching nodes labelled %s: %w", sel, st)
		}
		n, isNode := ev.Object.(*corev1.Node)
		if !isNode {
			continue
		}
		rv = n.ResourceVersion
		switch {
		case ev.Type == watch.Bookmark:
		case ev.Type != watch.Deleted && c.failedHere(n, config):
			failed[n.Name] = true
		default:
			delete(failed, n.Name)
		}
	}
	return rv, false, nil
}
