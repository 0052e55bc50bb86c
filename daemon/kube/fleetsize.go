package kube

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxNodes bounds a count of the cluster's nodes: more is no cluster's
// (a count the API server made up must not overflow).
const MaxNodes = 1 << 20

// CountNodes returns how many Nodes the cluster has, from a LIST of one
// Node: the API server counts the rest (metadata.remainingItemCount), so
// the answer costs one small response whatever the cluster's size. It is
// what a node knows of the burst its own update is part of: a rendered
// config reaches a whole pool at once (see daemon.UpdateSpread), and the
// fleet comes back at once after an API server outage (ReconnectJitter).
func (c *Client) CountNodes(ctx context.Context) (int, error) {
	list, err := c.API.Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("counting the cluster's nodes: %w", err)
	}
	n := len(list.Items)
	if rest := list.RemainingItemCount; rest != nil && *rest > 0 {
		n += int(min(*rest, MaxNodes))
	} else if list.Continue != "" {
		// An API server that does not count (an older one, or a list
		// served where it cannot) says only that there are more.
		return 0, fmt.Errorf("counting the cluster's nodes: the API server did not count them (no remainingItemCount)")
	}
	c.SetNodeCount(n)
	return n, nil
}

// SetNodeCount gives the client a count of the cluster's nodes made
// earlier (kept on the node), as CountNodes would.
func (c *Client) SetNodeCount(n int) { c.nodes.Store(int64(n)) }

// ReconnectJitter is the window the watches of the node's objects spread
// their next attempt over after a failure: it grows with the cluster as
// last counted (reconnect.go).
func (c *Client) ReconnectJitter() time.Duration { return ReconnectJitterFor(int(c.nodes.Load())) }
