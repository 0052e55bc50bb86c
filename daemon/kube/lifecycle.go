package kube

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nodeconfd/nodeconfd/names"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeConditions returns the conditions of the daemon's Node as the API
// server holds them (a GET: the lifecycle conditions are written seldom, and
// their lastTransitionTime must follow what is stored, not a cache).
func (c *Client) NodeConditions(ctx context.Context) ([]corev1.NodeCondition, error) {
	node, err := c.API.Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the conditions of node %s: %w", c.NodeName, err)
	}
	return node.Status.Conditions, nil
}

// PatchNodeConditions writes conds to the daemon's Node's status (the
// nodes/status subresource) with a strategic merge patch: conditions merge
// by type, so the kubelet's conditions are left as they are.
func (c *Client) PatchNodeConditions(ctx context.Context, conds []corev1.NodeCondition) error {
	data, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return err
	}
	if _, err := c.API.Nodes().Patch(ctx, c.NodeName, types.StrategicMergePatchType, data,
		metav1.PatchOptions{FieldManager: names.FieldManager}, "status"); err != nil {
		return fmt.Errorf("patching the status conditions of node %s: %w", c.NodeName, err)
	}
	return nil
}
