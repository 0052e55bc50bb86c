package controller

import (
	"context"
	"encoding/json"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/controller/rollout"
	"github.com/nodeconfd/nodeconfd/names"
)

// answerReboots writes the decision's reboot grants (the grant names the
// request it answers) and removes the stale ones. As hand, each patch
// carries the resourceVersion the decision was made on: a node changed
// since (its request withdrawn) fails it with a conflict, and the pool is
// decided again.
func (c *Controller) answerReboots(ctx context.Context, pool *mcfgv1.MachineConfigPool, d rollout.Decision, log *zap.Logger) error {
	for _, name := range d.Grant {
		node, err := c.cachedNode(name)
		if err != nil {
			return err
		}
		why := node.Annotations[names.RebootRequested]
		if err := c.patchGrant(ctx, node, why); err != nil {
			return fmt.Errorf("granting node %s its reboot: %w", name, err)
		}
		// The request is the node's own text: cleaned and cut in the log and the Event.
		why = rollout.Clean(why, 256)
		log.Info("Granted a node its reboot", zap.String("node", name), zap.String("request", why))
		c.event(pool, false, "RebootGranted", fmt.Sprintf("Node %s may reboot (requested: %q)", name, why))
	}
	for _, name := range d.Revoke {
		node, err := c.cachedNode(name)
		if err != nil {
			return err
		}
		if err := c.patchGrant(ctx, node, nil); err != nil {
			return fmt.Errorf("removing node %s's reboot grant: %w", name, err)
		}
		log.Info("Removed a reboot grant that answers no request", zap.String("node", name))
	}
	return nil
}

// patchGrant sets the node's grant to value (nil removes it).
func (c *Controller) patchGrant(ctx context.Context, node *corev1.Node, value any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": node.ResourceVersion,
		"annotations":     map[string]any{names.RebootGranted: value}}})
	if err != nil {
		return err
	}
	_, err = c.API.Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (c *Controller) cachedNode(name string) (*corev1.Node, error) {
	obj, ok, err := c.nodes.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, fmt.Errorf("node %s: not in the cache", name)
	}
	return obj.(*corev1.Node), nil
}
