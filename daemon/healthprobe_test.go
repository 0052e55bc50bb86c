package daemon

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeReady(t *testing.T) {
	reboot := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	ready := func(s corev1.ConditionStatus, beat time.Time) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s,
			Reason: "KubeletReady", LastHeartbeatTime: metav1.NewTime(beat)}}}}
	}
	for _, tc := range []struct {
		name  string
		node  *corev1.Node
		since time.Time
		want  bool
	}{
		{"ready, no reboot", ready(corev1.ConditionTrue, reboot.Add(-time.Hour)), time.Time{}, true},
		{"ready since the reboot", ready(corev1.ConditionTrue, reboot.Add(time.Second)), reboot, true},
		{"ready, heartbeat from before the reboot", ready(corev1.ConditionTrue, reboot.Add(-time.Minute)), reboot, false},
		{"not ready", ready(corev1.ConditionFalse, reboot.Add(time.Minute)), reboot, false},
		{"no condition", &corev1.Node{}, time.Time{}, false},
	} {
		got, why, err := nodeReady(tc.node, tc.since)
		if err != nil || got != tc.want || (!got && why == "") {
			t.Errorf("%s: %v %q %v, want %v", tc.name, got, why, err, tc.want)
		}
	}
}
