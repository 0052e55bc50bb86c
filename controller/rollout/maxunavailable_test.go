package rollout

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestMaxUnavailable ports upstream's TestMaxUnavailable (4 nodes), and
// adds nodeconfd's refusal of a negative value.
func TestMaxUnavailable(t *testing.T) {
	tests := []struct {
		name    string
		pool    string
		max     *intstr.IntOrString
		total   int
		want    int
		wantErr bool
	}{
		{"unset", "worker", nil, 4, 1, false},
		{"2", "worker", ptr(intstr.FromInt32(2)), 4, 2, false},
		{"0 is 1", "worker", ptr(intstr.FromInt32(0)), 4, 1, false},
		{"50%", "worker", ptr(intstr.FromString("50%")), 4, 2, false},
		{"60% rounds down", "worker", ptr(intstr.FromString("60%")), 4, 2, false},
		{"10% of 4 is 1", "worker", ptr(intstr.FromString("10%")), 4, 1, false},
		{"50 percent", "worker", ptr(intstr.FromString("50 percent")), 4, 0, true},
		{"60 without %", "worker", ptr(intstr.FromString("60")), 4, 0, true},
		{"40 %", "worker", ptr(intstr.FromString("40 %")), 4, 0, true},
		{"negative", "worker", ptr(intstr.FromInt32(-1)), 4, 0, true},
		{"negative percent", "worker", ptr(intstr.FromString("-50%")), 4, 0, true},
		{"arbiter is always 1", "arbiter", ptr(intstr.FromInt32(3)), 4, 1, false},
		{"no nodes", "worker", ptr(intstr.FromString("50%")), 0, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mkPool(tt.pool, "")
			p.Spec.MaxUnavailable = tt.max
			got, err := MaxUnavailable(p, tt.total)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "MachineConfigPool "+tt.pool+": spec.maxUnavailable") {
					t.Fatalf("got %d, %v; want an error naming the field", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
