package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The health gate's Node annotations (docs/status.md, "Health gate").
const (
	// FailedConfig is the daemon's: the config that failed the health gate
	// on the node and was rolled back. Other nodes do not take it up while
	// it is there.
	FailedConfig = AnnotationPrefix + "failedConfig"
	// RetryFailedConfig is the administrator's: a new value (any, a date
	// or a counter) makes a node holding its previous config after a
	// failed health gate try the failed config again.
	RetryFailedConfig = AnnotationPrefix + "retryFailedConfig"
)

// SetFailedConfig writes the failedConfig annotation.
func (c *Client) SetFailedConfig(ctx context.Context, name string) error {
	return c.patchNode(ctx, map[string]any{"metadata": map[string]any{"annotations": map[string]any{FailedConfig: name}}})
}

// ClearFailedConfig removes the failedConfig annotation.
func (c *Client) ClearFailedConfig(ctx context.Context) error {
	return c.patchNode(ctx, map[string]any{"metadata": map[string]any{"annotations": map[string]any{FailedConfig: nil}}})
}

// FailedOn names another node whose failedConfig annotation is config, ""
// when none (one LIST of the Nodes).
func (c *Client) FailedOn(ctx context.Context, config string) (string, error) {
	nodes, err := c.API.Nodes().List(ctx, metav1.ListOptions{}) // a quorum read: the failure may be a moment old
	if err != nil {
		return "", fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		if n.Name != c.NodeName && n.Annotations[FailedConfig] == config {
			return n.Name, nil
		}
	}
	return "", nil
}
