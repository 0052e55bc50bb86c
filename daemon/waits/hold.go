// Package waits is what may hold an update of the node (phases.Waits): an
// administrator's pause annotation on the Node, the maintenance windows
// (by flag, or a ConfigMap per pool the daemon watches), pods on the node
// that block a disruption, and alerts firing in Prometheus (alerts.go,
// kured's alert gating). This file holds the pure decisions; the adapter
// reading the watch caches and the pods is in source.go, Prometheus' in
// prometheus.go.
package waits

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/window"
)

// maxPauseText caps the annotation's text shown in the status.
const maxPauseText = 256

// pauseHold is the hold of a node whose annotations pause it, seen paused
// since since.
func pauseHold(annotations map[string]string, since time.Time) (phases.Hold, bool) {
	v, ok := annotations[names.PauseAnnotation]
	if !ok {
		return phases.Hold{}, false
	}
	return phases.Hold{Kind: phases.HoldPaused, Message: fmt.Sprintf(
		"Paused by annotation %s=%q since %s; the update goes on once the annotation is removed",
		names.PauseAnnotation, clean(v), since.UTC().Format(time.RFC3339))}, true
}

// clean keeps the annotation's text printable and short.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxPauseText {
		s = strings.ToValidUTF8(s[:maxPauseText], "") + "…"
	}
	return s
}

// Windows are the maintenance windows in force and where they come from.
type Windows struct {
	List window.Windows
	// Source names where they come from: the flag, or the ConfigMap.
	Source string
	// AllUpdates holds rebootless updates too.
	AllUpdates bool
	// Err, when set, is why the windows cannot be read: every update they
	// apply to waits, the message says why.
	Err error
}

// windowHold is the hold of an update outside the windows at now.
func windowHold(w Windows, disruptive bool, now time.Time) (phases.Hold, bool) {
	if !disruptive && !w.AllUpdates {
		return phases.Hold{}, false
	}
	if w.Err != nil {
		return phases.Hold{Kind: phases.HoldWindow, Message: fmt.Sprintf(
			"Waiting for readable maintenance windows: %v", w.Err)}, true
	}
	st := w.List.At(now)
	if st.Open {
		return phases.Hold{}, false
	}
	if st.Next.IsZero() {
		return phases.Hold{Kind: phases.HoldWindow, Message: fmt.Sprintf(
			"Outside the maintenance windows (%s, %s): none ever opens", w.Source, texts(w.List))}, true
	}
	return phases.Hold{Kind: phases.HoldWindow, Until: st.Next, Message: fmt.Sprintf(
		"Outside the maintenance windows (%s, %s); the next opens at %s (%q)", w.Source, texts(w.List),
		st.Next.UTC().Format(time.RFC3339), st.Window)}, true
}

func texts(ws window.Windows) string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Text)
	}
	return strings.Join(out, "; ")
}

// maxPodsNamed bounds the pods a message names.
const maxPodsNamed = 10

// podsHold is the hold of a disruptive update while pods matching the
// blocking selector run on the node (finished pods do not count).
func podsHold(pods []corev1.Pod, selector string) (phases.Hold, bool) {
	var names []string
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		names = append(names, p.Namespace+"/"+p.Name)
	}
	if len(names) == 0 {
		return phases.Hold{}, false
	}
	shown := names
	if len(shown) > maxPodsNamed {
		shown = append(shown[:maxPodsNamed:maxPodsNamed], fmt.Sprintf("and %d more", len(names)-maxPodsNamed))
	}
	what := "1 pod"
	if len(names) != 1 {
		what = fmt.Sprintf("%d pods", len(names))
	}
	return phases.Hold{Kind: phases.HoldBlockingPods, Message: fmt.Sprintf(
		"Blocked by %s matching %s on the node: %s; the update starts once they are gone", what, selector,
		strings.Join(shown, ", "))}, true
}
