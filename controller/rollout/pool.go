package rollout

import (
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Membership decides which pool each node is in (PoolFor); the pools'
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

// PoolFor is the pool whose rendered config the node runs, decided as
// upstream's getPrimaryPoolForNode: among the pools whose nodeSelector
// matches the node, master wins over everything (a master labelled infra
// stays a master, OCPBUGS-2177), then a single custom pool wins over
// worker, then worker. A node in two custom pools is an error naming the
// node and the pools, since no order between custom pools is defined; a
// node in none (or a Windows node) has no pool (nil, nil). A pool with a
// nil or empty nodeSelector selects no node: an empty selector would
// otherwise select every node of the cluster.
func (m Membership) PoolFor(node *corev1.Node) (*mcfgv1.MachineConfigPool, error) {
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
		case masterPool:
			master = p
		case workerPool:
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

// MaxUnavailable is how many of the pool's total nodes may be unavailable
// at once: spec.maxUnavailable as a number or a percentage of total
// (rounded down), 1 when unset, and never less than 1 so that a small pool
// still moves (as upstream). The arbiter pool of a two-node cluster always
// takes 1, as upstream, since its node holds the etcd quorum. A negative or
// malformed value is an error naming the field: upstream lets a negative
// value through, which silently stops the pool.
func MaxUnavailable(pool *mcfgv1.MachineConfigPool, total int) (int, error) {
	if pool.Name == arbiterPool {
		return 1, nil
	}
	v := intstr.FromInt32(1)
	if pool.Spec.MaxUnavailable != nil {
		v = *pool.Spec.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, false)
	if err != nil {
		return 0, fmt.Errorf("MachineConfigPool %s: spec.maxUnavailable %q: want a number or a percentage such as \"10%%\": %w",
			pool.Name, v.String(), err)
	}
	if n < 0 {
		return 0, fmt.Errorf("MachineConfigPool %s: spec.maxUnavailable %q: must not be negative", pool.Name, v.String())
	}
	return max(n, 1), nil
}
