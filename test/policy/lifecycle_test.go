package policy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
)

// lifecycleWrites: with the token of its pod on node A, the daemon may set the Node lifecycle
// conditions (--node-lifecycle-conditions) of Node A through its own adapter, and nothing else
// of any Node's status: not node B's, not the kubelet's conditions, not another condition type,
// not capacity or addresses; with a token bound to nothing, not even its own.
func lifecycleWrites(ctx context.Context, t *testing.T, b *bed) {
	// The kubelet's part of the status, as a kubelet (here the admin) reports it.
	for _, n := range []string{nodeA, nodeB} {
		node, err := b.admin.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		check(t, err)
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		node.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.0.1"}}
		_, err = b.admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		check(t, err)
	}
	api, err := kubeapi.NewAPI(b.bound)
	check(t, err)
	own := &kube.Client{API: api, NodeName: nodeA}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	planned := []corev1.NodeCondition{{Type: corev1.NodeMaintenancePlanned, Status: corev1.ConditionTrue,
		Reason: "NodeConfigUpdatePlanned", Message: "test", LastHeartbeatTime: now, LastTransitionTime: now}}
	for _, typ := range []corev1.NodeConditionType{corev1.NodeMaintenancePlanned, corev1.NodeDrainInProgress,
		corev1.NodeDrained, corev1.NodeMaintenanceInProgress} {
		c := planned[0]
		c.Type = typ
		if err := own.PatchNodeConditions(ctx, []corev1.NodeCondition{c}); err != nil {
			t.Errorf("setting %s on its own Node %s: %v", typ, nodeA, err)
		}
	}
	conds, err := own.NodeConditions(ctx)
	check(t, err)
	if got := conditionTypes(conds); got != "DrainInProgress Drained MaintenanceInProgress MaintenancePlanned Ready" {
		t.Errorf("Node %s's conditions after the daemon's writes: %s", nodeA, got)
	}

	k := kubernetes.NewForConfigOrDie(b.bound)
	statusPatch := func(node, patch string) func() error {
		return func() error {
			_, err := k.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch),
				metav1.PatchOptions{}, "status")
			return err
		}
	}
	const only = "refused update of nodes/status " + nodeA + ": the daemon may change only the conditions " +
		"MaintenancePlanned, DrainInProgress, Drained, MaintenanceInProgress of its Node's status"
	for _, c := range []deniedCase{
		{"NodeB", func() error {
			return (&kube.Client{API: api, NodeName: nodeB}).PatchNodeConditions(ctx, planned)
		}, "refused update of nodes/status " + nodeB + ": the daemon of node " + nodeA + " may only write its own Node"},
		{"Ready", statusPatch(nodeA, `{"status":{"conditions":[{"type":"Ready","status":"False","reason":"X"}]}}`), only},
		{"OtherType", statusPatch(nodeA, `{"status":{"conditions":[{"type":"NetworkUnavailable","status":"True","reason":"X"}]}}`), only},
		{"Capacity", statusPatch(nodeA, `{"status":{"capacity":{"pods":"999"}}}`), only + ", nothing else of it"},
		{"Addresses", statusPatch(nodeA, `{"status":{"addresses":[{"type":"InternalIP","address":"10.9.9.9"}]}}`),
			only + ", nothing else of it"},
		{"UnboundToken", func() error {
			u, err := kubeapi.NewAPI(b.unbound)
			if err != nil {
				return err
			}
			return (&kube.Client{API: u, NodeName: nodeA}).PatchNodeConditions(ctx, planned)
		}, "carries no authentication.kubernetes.io/node-name claim"},
	} {
		t.Run("Denied/"+c.name, func(t *testing.T) {
			if err := wantDenied(c.do(), c.want); err != nil {
				t.Error(err)
			}
		})
	}
	nodeBAfter, err := b.admin.CoreV1().Nodes().Get(ctx, nodeB, metav1.GetOptions{})
	check(t, err)
	if got := conditionTypes(nodeBAfter.Status.Conditions); got != "Ready" {
		t.Errorf("Node %s's conditions after the refused writes: %s", nodeB, got)
	}
}

// conditionTypes are the types of conds, sorted (a strategic merge patch puts new ones first).
func conditionTypes(conds []corev1.NodeCondition) string {
	types := make([]string, 0, len(conds))
	for _, c := range conds {
		types = append(types, string(c.Type))
	}
	slices.Sort(types)
	return strings.Join(types, " ")
}
