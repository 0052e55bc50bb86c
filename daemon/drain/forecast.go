package drain

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/phases/preview"
)

// Forecast says what a drain of the node would do if it started now,
// without touching anything: the pods Select picks, each with the budgets
// that cover it (one LIST of the budgets per namespace), the ones a budget
// at zero would hold, and what stays. Pods no controller would recreate
// (without EvictUnowned) make it Refused, as the update's check before the
// cordon would.
func (d *Drainer) Forecast(ctx context.Context) (preview.DrainForecast, error) {
	f, _, err := d.forecast(ctx)
	return f, err
}

// forecast is Forecast, with the pods budgets at zero hold and those
// budgets.
func (d *Drainer) forecast(ctx context.Context) (preview.DrainForecast, []heldPod, error) {
	var f preview.DrainForecast
	list, err := d.listPods(ctx)
	if err != nil {
		return f, nil, err
	}
	sel, err := Select(podPointers(list.Items), d.EvictUnowned)
	var unowned *UnownedError
	if errors.As(err, &unowned) {
		f.Refused = err.Error()
		return f, nil, nil
	}
	if err != nil {
		return f, nil, err
	}
	f.Skipped, f.Evict = sel.Skipped, []preview.ForecastPod{}
	budgets := map[string][]policyv1.PodDisruptionBudget{}
	var held []heldPod
	for _, p := range sel.Evict {
		if _, ok := budgets[p.Namespace]; !ok {
			l, err := d.listBudgets(ctx, p.Namespace)
			if err != nil {
				return f, nil, err
			}
			budgets[p.Namespace] = l
		}
		covering := budgetsOf(p, budgets[p.Namespace])
		fp := preview.ForecastPod{Pod: podName(p), Last: d.Last != nil && d.Last.Matches(labels.Set(p.Labels))}
		var zero []policyv1.PodDisruptionBudget
		for _, b := range covering {
			fp.Budgets = append(fp.Budgets, describeBudgets([]policyv1.PodDisruptionBudget{b}))
			if b.Status.DisruptionsAllowed <= 0 {
				zero = append(zero, b)
			}
		}
		if len(zero) > 0 && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			fp.BlockedBy = describeBudgets(zero)
			f.Blocked++
			held = append(held, heldPod{pod: p, zero: zero})
		}
		f.Evict = append(f.Evict, fp)
	}
	return f, held, nil
}

// maxBudgets bounds the PodDisruptionBudgets read of one namespace: a
// tenant makes them, and one that made a million must not make every
// drain and forecast read them all.
const maxBudgets = 1000

// listBudgets reads a namespace's PodDisruptionBudgets, a page at a time,
// up to maxBudgets.
func (d *Drainer) listBudgets(ctx context.Context, ns string) ([]policyv1.PodDisruptionBudget, error) {
	var items []policyv1.PodDisruptionBudget
	_, err := kubeapi.Pages(ctx, d.Client.PodDisruptionBudgets(ns).List, metav1.ListOptions{},
		"PodDisruptionBudgets in namespace "+ns, maxBudgets, func(l *policyv1.PodDisruptionBudgetList) error {
			items = append(items, l.Items...)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("listing the PodDisruptionBudgets of namespace %s: %w", ns, err)
	}
	return items, nil
}
