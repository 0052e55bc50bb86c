package drain

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nodeconfd/nodeconfd/names"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// cordonedByValue is the annotation's value: who cordoned.
const cordonedByValue = "nodeconfd"

// Cordon marks the node unschedulable and reports whether this daemon
// cordoned it: true when it did now or earlier (its annotation is there),
// false when an administrator had cordoned it (that cordon is left as is).
func (d *Drainer) Cordon(ctx context.Context) (bool, error) {
	byUs := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := d.Client.Nodes().Get(ctx, d.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ours := node.Annotations[names.CordonedBy] != ""
		if node.Spec.Unschedulable && !ours {
			byUs = false
			return nil
		}
		byUs = true
		if node.Spec.Unschedulable {
			return nil
		}
		return d.patchCordon(ctx, node, true)
	})
	if err != nil {
		return false, fmt.Errorf("cordoning node %s: %w", d.NodeName, err)
	}
	return byUs, nil
}

// Uncordon lifts the cordon this daemon set (the annotation is there) and
// removes the annotation. A node without it is left alone: either it is
// not cordoned, or an administrator cordoned it.
func (d *Drainer) Uncordon(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := d.Client.Nodes().Get(ctx, d.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if node.Annotations[names.CordonedBy] == "" {
			return nil
		}
		return d.patchCordon(ctx, node, false)
	})
	if err != nil {
		return fmt.Errorf("uncordoning node %s: %w", d.NodeName, err)
	}
	return nil
}

// patchCordon sets spec.unschedulable and the annotation in one merge patch
// that holds only if the node did not change since it was read.
func (d *Drainer) patchCordon(ctx context.Context, node *corev1.Node, cordon bool) error {
	var ann any // null removes the annotation
	if cordon {
		ann = cordonedByValue
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": node.ResourceVersion,
			"annotations":     map[string]any{names.CordonedBy: ann},
		},
		"spec": map[string]any{"unschedulable": cordon},
	})
	if err != nil {
		return err
	}
	_, err = d.Client.Nodes().Patch(ctx, node.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: names.FieldManager})
	return err
}

// Recordon cordons the node again when this daemon's cordon was lifted by
// someone else during an update: its annotation is still there (this
// daemon's own uncordon removes it in the same patch) while the node is
// schedulable. It never cordons a node without the annotation, so it cannot
// undo the update's own uncordon. It reports whether it cordoned. Who
// lifted the cordon is not known: spec.unschedulable false is the field's
// absence, which no field manager owns (a probe on the test bed: the
// managed fields then name only earlier, unrelated writers).
func (d *Drainer) Recordon(ctx context.Context) (did bool, err error) {
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := d.Client.Nodes().Get(ctx, d.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if node.Annotations[names.CordonedBy] == "" || node.Spec.Unschedulable {
			did = false
			return nil
		}
		did = true
		return d.patchCordon(ctx, node, true)
	})
	if err != nil {
		return false, fmt.Errorf("cordoning node %s again: %w", d.NodeName, err)
	}
	return did, nil
}
