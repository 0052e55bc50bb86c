// Package pools is the one rule that puts a node in a MachineConfigPool.
// The controller hands a node the rendered config of the pool this rule
// gives, and the node's daemon accepts only that pool's configs and names
// that pool in its MachineConfigNode: both read it here, so they cannot
// disagree. It reads API objects only (no clients, no I/O).
package pools

import (
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Pool names upstream treats specially.
const (
	Master  = "master"
	Worker  = "worker"
	Arbiter = "arbiter"
	// osLabel marks Windows nodes, which no pool manages (as upstream).
	osLabel = "kubernetes.io/os"
)

// Membership decides which pool each node is in (For); the pools'
// nodeSelectors are converted once, not once per node (a reconcile asks
// for every node of the cluster).
type Membership struct {
	pools []*mcfgv1.MachineConfigPool
	sels  []labels.Selector
	errs  []error
}

// NewMembership converts the pools' nodeSelectors.
func NewMembership(pools []*mcfgv1.MachineConfigPool) Membership {
	m := Membership{pools: pools, sels: make([]labels.Selector, len(pools)), errs: make([]error, len(pools))}
	for i, p := range pools {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
		if err != nil {
			m.errs[i] = fmt.Errorf("MachineConfigPool %s: spec.nodeSelector: %w", p.Name, err)
			continue
		}
		m.sels[i] = sel
	}
	return m
}

// For is the pool whose rendered config the node runs, decided as
// upstream's getPrimaryPoolForNode: among the pools whose nodeSelector
// matches the node, master wins over everything (a master labelled infra
// stays a master, OCPBUGS-2177), then a single custom pool wins over
// worker, then worker. A node in two custom pools is an error naming the
// node and the pools, since no order between custom pools is defined; a
// node in none (or a Windows node) has no pool (nil, nil). A pool with a
// nil or empty nodeSelector selects no node: an empty selector would
// otherwise select every node of the cluster.
func (m Membership) For(node *corev1.Node) (*mcfgv1.MachineConfigPool, error) {
	if node.Labels[osLabel] == "windows" {
		return nil, nil
	}
	var master, worker *mcfgv1.MachineConfigPool
	var custom []*mcfgv1.MachineConfigPool
	set := labels.Set(node.Labels)
	for i, p := range m.pools {
		if m.errs[i] != nil {
			return nil, m.errs[i]
		}
		if m.sels[i].Empty() || !m.sels[i].Matches(set) {
			continue
		}
		switch p.Name {
		case Master:
			master = p
		case Worker:
			worker = p
		default:
			custom = append(custom, p)
		}
	}
	switch {
	case len(custom) > 1:
		names := make([]string, len(custom))
		for i, p := range custom {
			names[i] = p.Name
		}
		slices.Sort(names)
		return nil, fmt.Errorf("node %s is selected by %d custom MachineConfigPools (%s); a node may be in one custom pool only",
			node.Name, len(custom), strings.Join(names, ", "))
	case master != nil:
		return master, nil
	case len(custom) == 1:
		return custom[0], nil
	}
	return worker, nil
}

// NameFor is the name of the node's pool (For), or an error that says why
// the node has none: in no pool, or in two custom pools.
func NameFor(pools []*mcfgv1.MachineConfigPool, node *corev1.Node) (string, error) {
	p, err := NewMembership(pools).For(node)
	if err != nil {
		return "", err
	}
	if p == nil {
		if node.Labels[osLabel] == "windows" {
			return "", fmt.Errorf("node %s is a Windows node, which no MachineConfigPool manages", node.Name)
		}
		return "", fmt.Errorf("node %s is in no MachineConfigPool: no pool's spec.nodeSelector selects its labels", node.Name)
	}
	return p.Name, nil
}
