// Package migrate removes from a cluster what an older nodeconfd left there
// and the current design has no use for. nodeconfd controller runs it at
// its start.
//
// The Lease budget. Before issue 26 the daemons kept a cluster-wide
// disruption budget of coordination.k8s.io Leases in their namespace: the
// slots, named <budget>-<i> (<budget> is --disruption-budget, by default
// nodeconfd-disruption; <i> from 0), each labelled
// nodeconfd.io/disruption-budget=<budget>, and the entries of the queue of
// waiters, named <budget>-q-<16 hex digits> (an FNV-1a hash of the node's
// name), labelled the same and nodeconfd.io/disruption-role=waiter. Every
// version labelled both (a Lease of a slot's name without the label was
// refused as not the budget's), so a Lease is the old budget's exactly when
// it carries the label and is named as a slot or an entry of the budget
// the label names. Nothing else is touched: not the controller's
// leader-election Lease, not a Lease that only looks like a slot, not a
// Lease of another namespace.
package migrate

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The labels the old daemons put on the budget's Leases.
const (
	// BudgetLabel is on every Lease of the budget; its value is the
	// budget's name.
	BudgetLabel = "nodeconfd.io/disruption-budget"
	// RoleLabel marks a queue entry, with the value RoleWaiter; slots have
	// no RoleLabel.
	RoleLabel  = "nodeconfd.io/disruption-role"
	RoleWaiter = "waiter"
)

var (
	slotSuffix  = regexp.MustCompile(`^-(0|[1-9][0-9]*)$`)
	entrySuffix = regexp.MustCompile(`^-q-[0-9a-f]{16}$`)
)

// IsLeaseBudget reports whether l is a Lease of the old disruption budget:
// a slot or a queue entry, as the daemons before issue 26 wrote them.
func IsLeaseBudget(l *coordinationv1.Lease) bool {
	budget, ok := l.Labels[BudgetLabel]
	if !ok || budget == "" {
		return false
	}
	suffix, ok := strings.CutPrefix(l.Name, budget)
	if !ok {
		return false
	}
	role, hasRole := l.Labels[RoleLabel]
	switch {
	case !hasRole:
		return slotSuffix.MatchString(suffix)
	case role == RoleWaiter:
		return entrySuffix.MatchString(suffix)
	}
	return false
}

// maxBudgetLeases bounds the Leases read: the old budget had at most a
// slot and a waiter per node.
const maxBudgetLeases = 20000

// DeleteLeaseBudget deletes the old disruption budget's Leases in
// namespace (IsLeaseBudget) and returns their names. It lists only the
// Leases that carry BudgetLabel; each is deleted with its UID as a
// precondition, and one already gone is no error. A nil log logs nothing.
func DeleteLeaseBudget(ctx context.Context, client kubeapi.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList],
	namespace string, log *zap.Logger) ([]string, error) {
	if log == nil {
		log = zap.NewNop()
	}
	var leases []coordinationv1.Lease
	_, err := kubeapi.Pages(ctx, client.List, metav1.ListOptions{LabelSelector: BudgetLabel}, "Leases labelled "+BudgetLabel,
		maxBudgetLeases, func(l *coordinationv1.LeaseList) error {
			leases = append(leases, l.Items...)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("listing the Leases of the old disruption budget in namespace %s: %w", namespace, err)
	}
	var deleted []string
	for i := range leases {
		l := &leases[i]
		if !IsLeaseBudget(l) {
			log.Info("Leaving a Lease labelled as the old disruption budget's: its name is not one the budget used",
				zap.String("lease", namespace+"/"+l.Name), zap.String("budget", l.Labels[BudgetLabel]))
			continue
		}
		uid := l.UID
		err := client.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return deleted, fmt.Errorf("deleting Lease %s/%s of the old disruption budget: %w", namespace, l.Name, err)
		}
		if err == nil {
			deleted = append(deleted, l.Name)
			log.Info("Deleted a Lease of the old disruption budget", zap.String("lease", namespace+"/"+l.Name),
				zap.String("holder", holder(l)))
		}
	}
	return deleted, nil
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
