package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/window"
)

func asks(why string) opt    { return annot(names.RebootRequested, why) }
func granted(why string) opt { return annot(names.RebootGranted, why) }

// Reboot requests share the pool's room with the config rollout, which
// goes first; a granted node counts as unavailable until its request is
// gone; a grant that answers no request is removed.
func TestNextReboots(t *testing.T) {
	T := corev1.ConditionTrue
	tests := []struct {
		name          string
		max           int
		paused        bool
		nodes         []*corev1.Node
		hand, grant   []string
		revoke        []string
		waitingSubstr string
	}{
		{"one of two requests granted, oldest zone first", 1, false, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T)),
			mkNode("node-1", v1, v1, ready(T), asks("sentinel a"), label(ZoneLabel, "b")),
			mkNode("node-2", v1, v1, ready(T), asks("alice: kernel"), label(ZoneLabel, "a")),
		}, nil, []string{"node-2"}, nil, ""},
		{"a granted node holds the room", 1, false, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T), asks("x"), granted("x")),
			mkNode("node-1", v1, v1, ready(T), asks("y")),
		}, nil, nil, nil, "reboot requested on node-1: 1 of 2 nodes unavailable (maxUnavailable 1): node-0 rebooting on request"},
		{"the config rollout goes first", 1, false, []*corev1.Node{
			mkNode("node-0", v0, v0, ready(T)),
			mkNode("node-1", v1, v1, ready(T), asks("y")),
		}, []string{"node-0"}, nil, nil, "reboot requested on node-1"},
		{"room for both", 2, false, []*corev1.Node{
			mkNode("node-0", v0, v0, ready(T)),
			mkNode("node-1", v1, v1, ready(T), asks("y")),
		}, []string{"node-0"}, []string{"node-1"}, nil, ""},
		{"a node not yet on the pool's config reboots with its update, not before", 2, false, []*corev1.Node{
			mkNode("node-0", v0, v1, ready(T), asks("y")),
		}, nil, nil, nil, ""},
		{"not ready, paused: not granted", 3, false, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(corev1.ConditionFalse), asks("y")),
			mkNode("node-1", v1, v1, ready(T), asks("y"), annot(names.PauseAnnotation, "")),
		}, nil, nil, nil, ""},
		{"a paused pool grants none", 1, true, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T), asks("y")),
		}, nil, nil, nil, ""},
		{"a stale grant is removed, and a changed request granted anew", 1, false, []*corev1.Node{
			mkNode("node-0", v1, v1, ready(T), granted("old")),
			mkNode("node-1", v1, v1, ready(T), asks("new"), granted("old")),
		}, nil, []string{"node-1"}, []string{"node-0", "node-1"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := withMax(mkPool("worker", ""), intstr.FromInt32(int32(tc.max)))
			p.Spec.Paused = tc.paused
			d := Next(Input{Pool: p, Target: v1, Nodes: tc.nodes, Now: time.Now()})
			if !slices.Equal(d.Hand, tc.hand) || !slices.Equal(d.Grant, tc.grant) || !slices.Equal(d.Revoke, tc.revoke) {
				t.Errorf("hand %v grant %v revoke %v, want %v %v %v", d.Hand, d.Grant, d.Revoke, tc.hand, tc.grant, tc.revoke)
			}
			if !strings.Contains(d.Waiting, tc.waitingSubstr) {
				t.Errorf("waiting %q, want %q in it", d.Waiting, tc.waitingSubstr)
			}
		})
	}
}

// A closed maintenance window holds reboot requests too, and says when
// the next one opens.
func TestNextRebootsWindow(t *testing.T) {
	ws, err := window.ParseList("Sat 00:00-01:00 UTC")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC) // a Friday
	p := withMax(mkPool("worker", ""), intstr.FromInt32(1))
	d := Next(Input{Pool: p, Target: v1, Now: now, Windows: ws,
		Nodes: []*corev1.Node{mkNode("node-0", v1, v1, ready(corev1.ConditionTrue), asks("y"))}})
	if len(d.Grant) != 0 || !strings.Contains(d.Waiting, "reboot requested on node-0: maintenance window opens") ||
		d.RequeueAfter != 12*time.Hour {
		t.Errorf("decision %+v", d)
	}
}
