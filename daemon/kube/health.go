package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/names"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FailedConfigHash is the FailedConfigHashLabel value of a config name:
// the first 32 hex digits of its SHA-256.
func FailedConfigHash(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

// SetFailedConfig writes the failedConfig annotation and its label, in one
// patch.
func (c *Client) SetFailedConfig(ctx context.Context, name string) error {
	return c.patchNode(ctx, map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{names.FailedConfig: name},
		"labels":      map[string]any{names.FailedConfigHashLabel: FailedConfigHash(name)}}})
}

// ClearFailedConfig removes the failedConfig annotation and its label.
func (c *Client) ClearFailedConfig(ctx context.Context) error {
	return c.patchNode(ctx, map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{names.FailedConfig: nil},
		"labels":      map[string]any{names.FailedConfigHashLabel: nil}}})
}

// SyncFailedConfigLabel makes node's failedConfigHash label follow its
// failedConfig annotation (an administrator removed the annotation, or a
// label went missing), and removes both once the node is given another
// config than the one that failed (the report lapsed: see failedHere): it
// patches only when something is out of step, and reports whether it did.
func (c *Client) SyncFailedConfigLabel(ctx context.Context, node *corev1.Node) (bool, error) {
	a := node.Annotations[names.FailedConfig]
	if a != "" && a != node.Annotations[names.DesiredConfig] {
		return true, c.ClearFailedConfig(ctx)
	}
	want, have := "", node.Labels[names.FailedConfigHashLabel]
	if a != "" {
		want = FailedConfigHash(a)
	}
	if want == have {
		return false, nil
	}
	var v any
	if want != "" {
		v = want
	}
	return true, c.patchNode(ctx, map[string]any{"metadata": map[string]any{"labels": map[string]any{names.FailedConfigHashLabel: v}}})
}

// failedConfigSelector selects the Nodes labelled as failing config.
func failedConfigSelector(config string) string {
	return names.FailedConfigHashLabel + "=" + FailedConfigHash(config)
}

// failedHere reports whether n, another node than c's, records config as
// failed (its annotation: the label only narrows the search) and is still
// given it. A report lapses when its node is given another config (that
// node's daemon then removes it): an old report must not hold a config an
// administrator later rolls back to.
func (c *Client) failedHere(n *corev1.Node, config string) bool {
	return n.Name != c.NodeName && n.Annotations[names.FailedConfig] == config && n.Annotations[names.DesiredConfig] == config
}

// FailedOn names another node whose failedConfig annotation is config, ""
// when none: one LIST of the Nodes labelled with its hash (a consistent
// read: the failure may be a moment old).
func (c *Client) FailedOn(ctx context.Context, config string) (string, error) {
	var names []string
	_, err := kubeapi.Pages(ctx, c.API.Nodes().List, metav1.ListOptions{LabelSelector: failedConfigSelector(config)}, "nodes", 0,
		func(l *corev1.NodeList) error {
			for i := range l.Items {
				if c.failedHere(&l.Items[i], config) {
					names = append(names, l.Items[i].Name)
				}
			}
			return nil
		})
	if err != nil {
		return "", fmt.Errorf("listing nodes labelled %s: %w", failedConfigSelector(config), err)
	}
	if len(names) == 0 {
		return "", nil
	}
	return slices.Min(names), nil
}
