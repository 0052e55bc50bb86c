package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The health gate's Node annotations and label (docs/status.md, "Health
// gate").
const (
	// FailedConfig is the daemon's: the config that failed the health gate
	// on the node and was rolled back. Other nodes do not take it up while
	// it is there.
	FailedConfig = AnnotationPrefix + "failedConfig"
	// RetryFailedConfig is the administrator's: a new value (any, a date
	// or a counter) makes a node holding its previous config after a
	// failed health gate try the failed config again.
	RetryFailedConfig = AnnotationPrefix + "retryFailedConfig"
	// FailedConfigHashLabel is the daemon's index of FailedConfig: its
	// value is FailedConfigHash of the annotation's (a label value has at
	// most 63 characters, a config name more), so that the other nodes
	// find the nodes on which a config failed with a label selector (a
	// small LIST, a WATCH) instead of listing every Node. The annotation
	// stays the truth: a label without it holds no one.
	FailedConfigHashLabel = AnnotationPrefix + "failedConfigHash"
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
		"annotations": map[string]any{FailedConfig: name},
		"labels":      map[string]any{FailedConfigHashLabel: FailedConfigHash(name)}}})
}

// ClearFailedConfig removes the failedConfig annotation and its label.
func (c *Client) ClearFailedConfig(ctx context.Context) error {
	return c.patchNode(ctx, map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{FailedConfig: nil},
		"labels":      map[string]any{FailedConfigHashLabel: nil}}})
}

// SyncFailedConfigLabel makes node's failedConfigHash label follow its
// failedConfig annotation (an administrator removed the annotation, or a
// label went missing), and removes both once the node is given another
// config than the one that failed (the report lapsed: see failedHere): it
// patches only when something is out of step, and reports whether it did.
func (c *Client) SyncFailedConfigLabel(ctx context.Context, node *corev1.Node) (bool, error) {
	a := node.Annotations[FailedConfig]
	if a != "" && a != node.Annotations[DesiredConfig] {
		return true, c.ClearFailedConfig(ctx)
	}
	want, have := "", node.Labels[FailedConfigHashLabel]
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
	return true, c.patchNode(ctx, map[string]any{"metadata": map[string]any{"labels": map[string]any{FailedConfigHashLabel: v}}})
}

// failedConfigSelector selects the Nodes labelled as failing config.
func failedConfigSelector(config string) string {
	return FailedConfigHashLabel + "=" + FailedConfigHash(config)
}

// failedHere reports whether n, another node than c's, records config as
// failed (its annotation: the label only narrows the search) and is still
// given it. A report lapses when its node is given another config (that
// node's daemon then removes it): an old report must not hold a config an
// administrator later rolls back to.
func (c *Client) failedHere(n *corev1.Node, config string) bool {
	return n.Name != c.NodeName && n.Annotations[FailedConfig] == config && n.Annotations[DesiredConfig] == config
}

// FailedOn names another node whose failedConfig annotation is config, ""
// when none: one LIST of the Nodes labelled with its hash (a consistent
// read: the failure may be a moment old).
func (c *Client) FailedOn(ctx context.Context, config string) (string, error) {
	var names []string
	_, err := Pages(ctx, c.API.Nodes().List, metav1.ListOptions{LabelSelector: failedConfigSelector(config)}, "nodes", 0,
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
