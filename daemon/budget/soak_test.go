package budget

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSoakUntil(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	soaking := func(renew time.Time, secs int32, until string) *coordinationv1.Lease {
		l := lease("b-0", "1", "node-a", secs)
		rt := metav1.NewMicroTime(renew)
		l.Spec.RenewTime = &rt
		if until != "" {
			l.Annotations = map[string]string{SoakAnnotation: until}
		}
		return l
	}
	for _, tc := range []struct {
		name string
		l    *coordinationv1.Lease
		want bool
	}{
		{"soaking", soaking(now.Add(-10*time.Second), 60, "2026-12-01T15:00:50Z"), true},
		{"soak over", soaking(now.Add(-70*time.Second), 60, "2026-12-01T14:59:50Z"), false},
		{"renewed since (a new update)", soaking(now, 1800, "2026-12-01T15:00:50Z"), false},
		{"no annotation", soaking(now, 60, ""), false},
		{"garbage", soaking(now, 60, "soon"), false},
	} {
		if got := !soakUntil(tc.l, now).IsZero(); got != tc.want {
			t.Errorf("%s: soaking = %v, want %v", tc.name, got, tc.want)
		}
	}
	found := map[string]*coordinationv1.Lease{"b-0": soaking(now.Add(-10*time.Second), 60, "2026-12-01T15:00:50Z")}
	if n := soakNote(found, now); !strings.Contains(n, "node-a soaks after its update until 2026-12-01T15:00:50Z") {
		t.Errorf("soakNote = %q", n)
	}
}
