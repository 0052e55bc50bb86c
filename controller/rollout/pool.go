package rollout

import (
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeconfd/nodeconfd/phases/pools"
)

// MaxUnavailable is how many of the pool's total nodes may be unavailable
// at once: spec.maxUnavailable as a number or a percentage of total
// (rounded down), 1 when unset, and never less than 1 so that a small pool
// still moves (as upstream). The arbiter pool of a two-node cluster always
// takes 1, as upstream, since its node holds the etcd quorum. A negative or
// malformed value is an error naming the field: upstream lets a negative
// value through, which silently stops the pool.
func MaxUnavailable(pool *mcfgv1.MachineConfigPool, total int) (int, error) {
	if pool.Name == pools.Arbiter {
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
