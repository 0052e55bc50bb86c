package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
)

// Events records Kubernetes Events on the node's MachineConfigNode and Node.
type Events struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	mcn, node   *corev1.ObjectReference
}

// NewEvents starts an event broadcaster writing to the API server. mcnUID
// is the MachineConfigNode's UID, which `kubectl describe` matches on.
func NewEvents(api API, nodeName string, mcnUID types.UID) *Events {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(eventSink{api})
	return &Events{
		broadcaster: b,
		recorder:    b.NewRecorder(Scheme(), corev1.EventSource{Component: "nodeconfd", Host: nodeName}),
		mcn: &corev1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfigNode",
			Name: nodeName, UID: mcnUID},
		// kubectl describe node looks for events whose UID is the node's name.
		node: &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: types.UID(nodeName)},
	}
}

// Event records one event on the MachineConfigNode, and on the Node when
// onNode is set.
func (e *Events) Event(onNode, warning bool, reason, message string) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	e.recorder.Event(e.mcn, typ, reason, message)
	if onNode {
		e.recorder.Event(e.node, typ, reason, message)
	}
}

// Shutdown flushes and stops the broadcaster.
func (e *Events) Shutdown() { e.broadcaster.Shutdown() }

// eventSink is record.EventSink over the daemon's API (client-go's own sink
// lives in the typed clientset, which the daemon does not link).
type eventSink struct{ api API }

func (s eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.api.Events(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
}

func (s eventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.api.Events(e.Namespace).Update(context.Background(), e, metav1.UpdateOptions{})
}

func (s eventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.api.Events(e.Namespace).Patch(context.Background(), e.Name, types.StrategicMergePatchType, data,
		metav1.PatchOptions{})
}
