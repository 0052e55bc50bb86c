package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
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
func NewEvents(client kubernetes.Interface, nodeName string, mcnUID types.UID) *Events {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &Events{
		broadcaster: b,
		recorder:    b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "nodeconfd", Host: nodeName}),
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
