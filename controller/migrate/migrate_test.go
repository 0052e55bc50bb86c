package migrate

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsLeaseBudget(t *testing.T) {
	slot := map[string]string{BudgetLabel: "nodeconfd-disruption"}
	entry := map[string]string{BudgetLabel: "nodeconfd-disruption", RoleLabel: RoleWaiter,
		"nodeconfd.io/queued-at": "1767225600000"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"nodeconfd-disruption-0", slot, true},
		{"nodeconfd-disruption-12", slot, true},
		{"nodeconfd-disruption-q-0123456789abcdef", entry, true},
		{"pool-a-3", map[string]string{BudgetLabel: "pool-a"}, true},
		// The label, but not a name the budget gave.
		{"nodeconfd-disruption-01", slot, false},
		{"nodeconfd-disruption-", slot, false},
		{"nodeconfd-disruption-x", slot, false},
		{"nodeconfd-disruption", slot, false},
		{"other-0", slot, false},
		{"nodeconfd-disruption-q-0123456789abcdef", slot, false}, // an entry's name without the role
		{"nodeconfd-disruption-0", entry, false},                 // a slot's name with the role
		{"nodeconfd-disruption-q-0123456789ABCDEF", entry, false},
		{"nodeconfd-disruption-q-0123", entry, false},
		{"nodeconfd-disruption-0", map[string]string{BudgetLabel: "nodeconfd-disruption", RoleLabel: "other"}, false},
		{"nodeconfd-disruption-0", map[string]string{BudgetLabel: ""}, false},
		// No label: never the budget's (the leader election's Lease, a look-alike).
		{"nodeconfd-disruption-0", nil, false},
		{"nodeconfd-controller", nil, false},
	} {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Labels: tc.labels}}
		if got := IsLeaseBudget(l); got != tc.want {
			t.Errorf("%s %v: %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
