package render

import (
	"errors"
	"fmt"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ErrNothingSelected is a pool whose selector selects no MachineConfig: a
// pool with nothing to render, not a broken one (a cluster's master pool
// before its first master fragment).
var ErrNothingSelected = errors.New("no MachineConfigs match")

// PoolSelector is the machineConfigSelector of upstream's pool of that
// name: the fragments whose role is the pool.
func PoolSelector(pool string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: pool}}
}

// Select returns the fragments a pool's machineConfigSelector selects, in
// their given order, leaving out every rendered config (named Prefix…). As upstream, a nil or empty selector selects nothing
// (it would select every config, rendered ones too), and a pool that
// selects nothing is an error.
func Select(pool string, selector *metav1.LabelSelector, configs []*mcfgv1.MachineConfig) ([]*mcfgv1.MachineConfig, error) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, fmt.Errorf("pool %s: machineConfigSelector: %w", pool, err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("pool %s: the machineConfigSelector is empty: it must select the pool's MachineConfigs by label", pool)
	}
	var out []*mcfgv1.MachineConfig
	for _, c := range configs {
		// A rendered config is never a fragment: a selector of only
		// NotIn or DoesNotExist terms would select the unlabelled
		// rendered configs, every render would merge the last one in
		// and name a new one, without end.
		if strings.HasPrefix(c.Name, Prefix) {
			continue
		}
		if sel.Matches(labels.Set(c.Labels)) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pool %s: %w: the selector %s", pool, ErrNothingSelected, sel)
	}
	return out, nil
}
