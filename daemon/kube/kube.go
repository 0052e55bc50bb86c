// Package kube is the daemon's adapter to the API server: its own Node and
// MachineConfigNode, the rendered MachineConfigs it fetches by name, and the
// watches of its own objects. The typed client under it, shared with the
// controller, is cluster/kubeapi.
package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/names"
	nodepools "github.com/nodeconfd/nodeconfd/phases/pools"
	"github.com/nodeconfd/nodeconfd/phases/status"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The daemon's client-side rate limits. A drain of 100 pods is about 110
// requests in a second: the burst covers it, and the drain's own bound on
// requests in flight keeps it inside the API server's priority-and-fairness
// share; steady state is a handful of requests a minute.
const (
	QPS   = 50
	Burst = 120
)

// mcnMaxMessageSize is the longest condition message the API takes.
const mcnMaxMessageSize = 32768

// Client reaches the API objects of one node. It keeps no state of its
// own: the status it writes comes whole from the caller.
type Client struct {
	API      kubeapi.API
	NodeName string
	// StatusWritten, when set, is told the conditions of every status
	// written, and (by the daemon) of the status it finds at start: the
	// metrics read the node's health from them.
	StatusWritten func(conds []metav1.Condition)
	// Readiness, when set, is asked before the watches of the node's
	// objects try again after a failure (Retry).
	Readiness *Readiness
	// nodes is the cluster's size as last counted (CountNodes), 0 before.
	nodes atomic.Int64
	// nodeWritten, when set (by NewWatch), is given the Node every write
	// of this client returned (see Watch.Node).
	nodeWritten func(*corev1.Node)
}

// MachineConfig GETs one rendered MachineConfig by name.
func (c *Client) MachineConfig(ctx context.Context, name string) (*mcfgv1.MachineConfig, error) {
	return c.API.MachineConfigs().Get(ctx, name, metav1.GetOptions{})
}

// Pool is the node's pool: the flag (--pool) when set; else, with a node,
// the pool the shared rule (phases/pools) gives among the cluster's pools,
// the one the controller hands the node configs of, or an error that says
// why the node has none; without a node (a config read from files), worker.
func Pool(pools []*mcfgv1.MachineConfigPool, node *corev1.Node, flag string) (string, error) {
	switch {
	case flag != "":
		return flag, nil
	case node == nil:
		return nodepools.Worker, nil
	}
	return nodepools.NameFor(pools, node)
}

// EnsureMCN creates the node's MachineConfigNode if missing (one create, or
// one create and one GET when it exists) and keeps spec.configVersion.desired,
// spec.pool and its owner, node, in step. It returns the object as stored.
func (c *Client) EnsureMCN(ctx context.Context, want *mcfgv1.MachineConfigNode, node *corev1.Node) (mcn *mcfgv1.MachineConfigNode, created bool, err error) {
	api := c.API.MachineConfigNodes()
	want = want.DeepCopy()
	want.OwnerReferences = NodeOwner(node)
	mcn, err = api.Create(ctx, want, metav1.CreateOptions{FieldManager: names.FieldManager})
	if err == nil {
		return mcn, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, false, fmt.Errorf("creating MachineConfigNode %s: %w", want.Name, err)
	}
	mcn, err = api.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("reading MachineConfigNode %s: %w", want.Name, err)
	}
	mcn, err = c.SyncSpec(ctx, mcn, node, want.Spec.Pool.Name, want.Spec.ConfigVersion.Desired)
	return mcn, false, err
}

// NodeOwner makes the Node the owner of its MachineConfigNode, as upstream
// does, so that the garbage collector deletes the MachineConfigNode of a
// deleted Node. It does not block the Node's deletion: nothing of the Node
// waits for its MachineConfigNode.
func NodeOwner(node *corev1.Node) []metav1.OwnerReference {
	if node == nil || node.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
}

// SyncSpec patches spec.configVersion.desired, spec.pool and the owner when
// they differ (a MachineConfigNode of an older release has no owner).
func (c *Client) SyncSpec(ctx context.Context, mcn *mcfgv1.MachineConfigNode, node *corev1.Node, pool, desired string) (*mcfgv1.MachineConfigNode, error) {
	owner := NodeOwner(node)
	ownerOK := owner == nil || slices.EqualFunc(mcn.OwnerReferences, owner, func(a, b metav1.OwnerReference) bool {
		return a.UID == b.UID && a.Kind == b.Kind && a.Name == b.Name
	})
	if mcn.Spec.ConfigVersion.Desired == desired && mcn.Spec.Pool.Name == pool && ownerOK {
		return mcn, nil
	}
	body := map[string]any{"spec": map[string]any{
		"pool":          map[string]string{"name": pool},
		"configVersion": map[string]string{"desired": desired},
	}}
	if !ownerOK {
		body["metadata"] = map[string]any{"ownerReferences": owner}
	}
	patch, _ := json.Marshal(body)
	out, err := c.API.MachineConfigNodes().Patch(ctx, mcn.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: names.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("updating spec of MachineConfigNode %s: %w", mcn.Name, err)
	}
	return out, nil
}

// WriteStatus writes the MachineConfigNode's conditions, config versions
// and observed generation in one merge patch of the status subresource
// (status.Writer). Messages longer than the API allows are cut, in a copy.
func (c *Client) WriteStatus(ctx context.Context, s status.Snapshot) error {
	conds := slices.Clone(s.Conditions)
	for i := range conds {
		if len(conds[i].Message) > mcnMaxMessageSize {
			conds[i].Message = conds[i].Message[:mcnMaxMessageSize-3] + "..."
		}
	}
	st := map[string]any{"conditions": conds, "irreconcilableChanges": irreconcilable(s)}
	if s.ETA != nil {
		st[UpdateETA] = eta(s.ETA)
	}
	if s.ObservedGeneration > 0 {
		st["observedGeneration"] = s.ObservedGeneration
	}
	if s.Desired != "" {
		cv := map[string]string{"desired": s.Desired}
		if s.Current != "" {
			cv["current"] = s.Current
		}
		st["configVersion"] = cv
	}
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	_, err = c.API.MachineConfigNodes().Patch(ctx, c.NodeName, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: names.FieldManager}, "status")
	if err == nil && c.StatusWritten != nil {
		c.StatusWritten(conds)
	}
	return err
}

// SetNodeState writes the currentConfig, state and reason annotations in one
// merge patch; an empty currentConfig is left alone, an empty reason removed.
func (c *Client) SetNodeState(ctx context.Context, currentConfig, state, reason string) error {
	ann := map[string]any{names.State: state}
	if currentConfig != "" {
		ann[names.CurrentConfig] = currentConfig
	}
	if reason != "" {
		ann[names.Reason] = reason
	} else {
		ann[names.Reason] = nil
	}
	return c.patchNode(ctx, map[string]any{"metadata": map[string]any{"annotations": ann}})
}

func (c *Client) patchNode(ctx context.Context, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	node, err := c.API.Nodes().Patch(ctx, c.NodeName, types.MergePatchType, data,
		metav1.PatchOptions{FieldManager: names.FieldManager})
	if err != nil {
		return fmt.Errorf("patching node %s: %w", c.NodeName, err)
	}
	if c.nodeWritten != nil {
		c.nodeWritten(node)
	}
	return nil
}
