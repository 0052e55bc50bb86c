package waits

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/window"
)

func TestPauseHold(t *testing.T) {
	since := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want string
	}{
		{name: "not paused", ann: map[string]string{"other": "x"}},
		{name: "paused", ann: map[string]string{names.PauseAnnotation: "alice: db migration"},
			want: `Paused by annotation nodeconfd.io/pause="alice: db migration" since 2026-12-01T15:00:00Z`},
		{name: "control characters", ann: map[string]string{names.PauseAnnotation: "bob\n\u202eevil"},
			want: `nodeconfd.io/pause="bob  evil"`},
		{name: "empty value", ann: map[string]string{names.PauseAnnotation: ""}, want: `nodeconfd.io/pause=""`},
	} {
		h, ok := pauseHold(tc.ann, since)
		if ok != (tc.want != "") || (ok && (h.Kind != phases.HoldPaused || !strings.Contains(h.Message, tc.want))) {
			t.Errorf("%s: %v %+v, want %q", tc.name, ok, h, tc.want)
		}
	}
	h, _ := pauseHold(map[string]string{names.PauseAnnotation: strings.Repeat("é", 300)}, since)
	if len(h.Message) > 400 || !strings.Contains(h.Message, "…") {
		t.Errorf("long value not cut: %d bytes", len(h.Message))
	}
}

func TestWindowHold(t *testing.T) {
	w, err := window.Parse("Tue 22:00-23:00 Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) // a Tuesday, 13:00 in Berlin
	flag := Windows{List: window.Windows{w}, Source: "--maintenance-window"}
	for _, tc := range []struct {
		name       string
		w          Windows
		disruptive bool
		now        time.Time
		want       string
	}{
		{name: "disruptive, outside", w: flag, disruptive: true, now: at,
			want: `the next opens at 2026-12-01T21:00:00Z ("Tue 22:00-23:00 Europe/Berlin")`},
		{name: "disruptive, inside", w: flag, disruptive: true, now: at.Add(9*time.Hour + 30*time.Minute)},
		{name: "rebootless goes", w: flag, now: at},
		{name: "rebootless held when all updates", w: Windows{List: flag.List, Source: "x", AllUpdates: true}, now: at,
			want: "the next opens at"},
		{name: "no windows", w: Windows{Source: "--maintenance-window"}, disruptive: true, now: at},
		{name: "unreadable", w: Windows{Err: errors.New("ConfigMap nodeconfd/w: data.windows: bad")}, disruptive: true,
			now: at, want: "Waiting for readable maintenance windows: ConfigMap nodeconfd/w: data.windows: bad"},
	} {
		h, ok := windowHold(tc.w, tc.disruptive, tc.now)
		if ok != (tc.want != "") || (ok && (h.Kind != phases.HoldWindow || !strings.Contains(h.Message, tc.want))) {
			t.Errorf("%s: %v %+v, want %q", tc.name, ok, h, tc.want)
		}
	}
	if h, _ := windowHold(flag, true, at); !h.Until.Equal(time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)) {
		t.Errorf("until %s", h.Until)
	}
}

func TestFromConfigMap(t *testing.T) {
	cm := func(data map[string]string) *corev1.ConfigMap { return &corev1.ConfigMap{Data: data} }
	if w := fromConfigMap(cm(map[string]string{KeyWindows: "Mon 01:00-02:00 UTC\nSat,Sun 00:00-24:00", KeyAllUpdates: "true"}), "cm"); w.Err != nil || len(w.List) != 2 || !w.AllUpdates {
		t.Errorf("good ConfigMap: %+v", w)
	}
	if w := fromConfigMap(cm(map[string]string{KeyWindows: "Mon 01:00"}), "ConfigMap ns/x"); w.Err == nil ||
		!strings.Contains(w.Err.Error(), "ConfigMap ns/x: data.windows: window \"Mon 01:00\"") {
		t.Errorf("bad windows: %v", w.Err)
	}
	if w := fromConfigMap(cm(map[string]string{KeyAllUpdates: "yes"}), "ConfigMap ns/x"); w.Err == nil ||
		!strings.Contains(w.Err.Error(), "data.allUpdates") {
		t.Errorf("bad allUpdates: %v", w.Err)
	}
}

func TestPodsHold(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}, Status: corev1.PodStatus{Phase: phase}}
	}
	if _, ok := podsHold(nil, "app=backup"); ok {
		t.Error("no pods held")
	}
	if _, ok := podsHold([]corev1.Pod{pod("done", corev1.PodSucceeded), pod("failed", corev1.PodFailed)}, "app=backup"); ok {
		t.Error("finished pods held")
	}
	h, ok := podsHold([]corev1.Pod{pod("b", corev1.PodRunning), pod("p", corev1.PodPending), pod("d", corev1.PodSucceeded)}, "app=backup")
	if !ok || h.Kind != phases.HoldBlockingPods || !strings.Contains(h.Message, "Blocked by 2 pods matching app=backup on the node: apps/b, apps/p;") {
		t.Errorf("%+v", h)
	}
	var many []corev1.Pod
	for i := 0; i < 13; i++ {
		many = append(many, pod(string(rune('a'+i)), corev1.PodRunning))
	}
	if h, _ := podsHold(many, "x"); !strings.Contains(h.Message, "and 3 more") {
		t.Errorf("%s", h.Message)
	}
}
