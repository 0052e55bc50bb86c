package drain

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nodeconfd/nodeconfd/names"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// SteerTaintKey is the daemon's own taint, PreferNoSchedule: while its
// node's disruptive update waits before the cordon, the scheduler places
// new pods elsewhere when it can, so fewer pods are to move once the drain
// starts. It never keeps a pod off the node for good (a preference, not a
// cordon), and the admission policy lets the daemon write no other taint.
const SteerTaintKey = "nodeconfd.io/update-pending"

// Steer puts the steering taint on the node (on) or takes it off; a node
// already so is left alone. The taints are written whole in a merge patch
// that holds only if the node did not change since it was read, so another
// writer's taint is never lost.
func (d *Drainer) Steer(ctx context.Context, on bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := d.Client.Nodes().Get(ctx, d.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		has := HasSteerTaint(node)
		if has == on {
			return nil
		}
		taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == SteerTaintKey })
		if on {
			taints = append(taints, corev1.Taint{Key: SteerTaintKey, Effect: corev1.TaintEffectPreferNoSchedule})
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			return err
		}
		_, err = d.Client.Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: names.FieldManager})
		return err
	})
	if err != nil {
		what := "taking the steering taint off"
		if on {
			what = "putting the steering taint on"
		}
		return fmt.Errorf("%s node %s: %w", what, d.NodeName, err)
	}
	return nil
}

// HasSteerTaint says whether the node carries the steering taint.
func HasSteerTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == SteerTaintKey })
}
