package rollout

import (
	"time"

	"github.com/nodeconfd/nodeconfd/names"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Rendered config names as upstream's tests name them.
const (
	v0 = "rendered-machine-config-v0"
	v1 = "rendered-machine-config-v1"
	v2 = "rendered-machine-config-v2"
)

// opt changes a test node.
type opt func(*corev1.Node)

// mkNode is a node with the given current and desired configs and, as
// upstream's NodeBuilder, state Done when they are equal and Working
// otherwise (unless an option sets the state).
func mkNode(name, cur, des string, opts ...opt) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}, Labels: map[string]string{}}}
	if cur != "" || des != "" {
		n.Annotations[names.CurrentConfig], n.Annotations[names.DesiredConfig] = cur, des
		n.Annotations[names.State] = names.StateWorking
		if cur == des {
			n.Annotations[names.State] = names.StateDone
		}
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func ready(s corev1.ConditionStatus) opt {
	return func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: s})
	}
}

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus) opt {
	return func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: s})
	}
}

func state(s string) opt { return annot(names.State, s) }

func annot(k, v string) opt { return func(n *corev1.Node) { n.Annotations[k] = v } }

func label(k, v string) opt { return func(n *corev1.Node) { n.Labels[k] = v } }

func created(t time.Time) opt {
	return func(n *corev1.Node) { n.CreationTimestamp = metav1.NewTime(t) }
}

func unschedulable(n *corev1.Node) { n.Spec.Unschedulable = true }

// mkPool is a pool selecting nodes with the label key (any value), none
// when key is empty.
func mkPool(name, key string) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if key != "" {
		p.Spec.NodeSelector = metav1.AddLabelToSelector(&metav1.LabelSelector{}, key, "")
	}
	return p
}

func withMax(p *mcfgv1.MachineConfigPool, v intstr.IntOrString) *mcfgv1.MachineConfigPool {
	p.Spec.MaxUnavailable = &v
	return p
}

// mkMCN is a MachineConfigNode whose Updated condition is True since
// updatedAt for current (False when updatedAt is zero), and NodeDegraded
// True with degradedMsg when that is set.
func mkMCN(name, current string, updatedAt time.Time, degradedMsg string) *mcfgv1.MachineConfigNode {
	m := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	m.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: current, Desired: current}
	upd := metav1.Condition{Type: string(mcfgv1.MachineConfigNodeUpdated), Status: metav1.ConditionFalse}
	if !updatedAt.IsZero() {
		upd.Status, upd.LastTransitionTime = metav1.ConditionTrue, metav1.NewTime(updatedAt)
	}
	deg := metav1.Condition{Type: string(mcfgv1.MachineConfigNodeNodeDegraded), Status: metav1.ConditionFalse}
	if degradedMsg != "" {
		deg.Status, deg.Message = metav1.ConditionTrue, degradedMsg
	}
	m.Status.Conditions = []metav1.Condition{upd, deg}
	return m
}

func nodeNames(nodes []*corev1.Node) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}
