package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/drain"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// TestOwnNodeOnly: with the token of its pod on node A, the daemon's ServiceAccount may write
// what belongs to node A (through the daemon's own adapters) and nothing of node B's, nor the
// parts of node A the cluster owns; each refusal names what was refused and why. With a token
// bound to nothing it may write nothing.
func TestOwnNodeOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	b := start(ctx, t)
	k := kubernetes.NewForConfigOrDie(b.bound)
	m := mcfgclient.NewForConfigOrDie(b.bound)

	// The policy is in force once it refuses the first write (it is loaded a moment after
	// its creation), and the eviction policy once its Pod parameters are cached.
	t.Cleanup(func() {
		if t.Failed() {
			// The type checker's warnings, should an expression not compile.
			t.Logf("policies' type checking:\n%s", kubectl(t, b.cp, "get", "validatingadmissionpolicies",
				"-o", `jsonpath={range .items[*]}{.metadata.name}: {.status}{"\n"}{end}`))
		}
	})
	eventually(ctx, t, "policy in force", func() error {
		return wantDenied(patchNode(ctx, k, nodeB, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/state":"Done"}}}`),
			"may only write its own Node")
	})
	eventually(ctx, t, "eviction policy in force", func() error {
		return wantDenied(evict(ctx, k, "web-b"), "may only evict pods of its own node")
	})

	t.Run("Allowed", func(t *testing.T) { ownWrites(ctx, t, b) })

	denied := deniedCases(ctx, b, k, m)
	for _, c := range denied {
		t.Run("Denied/"+c.name, func(t *testing.T) {
			if err := wantDenied(c.do(), c.want); err != nil {
				t.Error(err)
			}
		})
	}

	t.Run("LifecycleConditions", func(t *testing.T) { lifecycleWrites(ctx, t, b) })
	t.Run("Surge", func(t *testing.T) { surgeWrites(ctx, t, b, k) })
	ctl := controllerClient(ctx, t, b)
	t.Run("SurgeController", func(t *testing.T) { surgeControllerWrites(ctx, t, b, ctl) })
	t.Run("SurgeSpec", func(t *testing.T) { surgeSpecPinned(ctx, t, b, ctl) })
	t.Run("SurgeSlots", func(t *testing.T) { surgeSlotsBounded(ctx, t, k) })
	t.Run("SurgeGrants", func(t *testing.T) { surgeGrants(ctx, t, b, k, ctl) })

	t.Run("UnboundToken", func(t *testing.T) {
		u := kubernetes.NewForConfigOrDie(b.unbound)
		const want = "carries no authentication.kubernetes.io/node-name claim"
		if err := wantDenied(patchNode(ctx, u, nodeA, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/state":"Done"}}}`), want); err != nil {
			t.Error(err)
		}
		if err := wantDenied(event(ctx, u, "Node", nodeA), want); err != nil {
			t.Error(err)
		}
		if err := wantDenied(evict(ctx, u, "web-a"), want); err != nil {
			t.Error(err)
		}
		// Reads are not admission's: RBAC alone grants them.
		if _, err := u.CoreV1().Nodes().Get(ctx, nodeA, metav1.GetOptions{}); err != nil {
			t.Errorf("reading node %s with an unbound token: %v", nodeA, err)
		}
	})

	t.Logf("kubectl auth can-i --list --as=system:serviceaccount:nodeconfd:nodeconfd -n nodeconfd:\n%s",
		kubectl(t, b.cp, "auth", "can-i", "--list", "--as=system:serviceaccount:nodeconfd:nodeconfd", "-n", namespace))
}

// deniedCase is a write of the daemon of node A the policies refuse, with the refusal's text.
type deniedCase struct {
	name string
	do   func() error
	want string
}

// deniedCases are the writes the daemon of node A, with client k and m, must not make.
// failedLabel is the health gate's label, the one label the daemon may write on its Node.
const failedLabel = names.FailedConfigHashLabel

func deniedCases(ctx context.Context, b *bed, k kubernetes.Interface, m mcfgclient.Interface) []deniedCase {
	return []deniedCase{
		{"NodeB", func() error { return patchNode(ctx, k, nodeB, `{"spec":{"unschedulable":true}}`) },
			"refused update of nodes " + nodeB + ": the daemon of node " + nodeA + " may only write its own Node"},
		{"NodeBMachineConfigNodeStatus", func() error {
			_, err := m.MachineconfigurationV1().MachineConfigNodes().Patch(ctx, nodeB, types.MergePatchType,
				[]byte(`{"status":{"observedGeneration":1}}`), metav1.PatchOptions{}, "status")
			return err
		}, "refused update of machineconfignodes/status " + nodeB + ": the daemon of node " + nodeA + " may only write the MachineConfigNode " + nodeA},
		{"NodeBMachineConfigNode", func() error {
			_, err := m.MachineconfigurationV1().MachineConfigNodes().Patch(ctx, nodeB, types.MergePatchType,
				[]byte(`{"spec":{"configVersion":{"desired":"rendered-worker-9"}}}`), metav1.PatchOptions{})
			return err
		}, "may only write the MachineConfigNode " + nodeA},
		{"DesiredConfig", func() error {
			return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/desiredConfig":"rendered-worker-9"}}}`)
		}, "refused update of nodes " + nodeA + ": the daemon must not change its desiredConfig annotation"},
		{"RemoveDesiredConfig", func() error {
			return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/desiredConfig":null}}}`)
		}, "must not change its desiredConfig annotation"},
		{"Labels", func() error {
			return patchNode(ctx, k, nodeA, `{"metadata":{"labels":{"node-role.kubernetes.io/master":""}}}`)
		}, "refused update of nodes " + nodeA + ": the daemon must not change the Node's labels but " + failedLabel},
		// The health gate's label is allowed on its own Node only, and only as a hash.
		{"FailedConfigLabelNodeB", func() error {
			return patchNode(ctx, k, nodeB, `{"metadata":{"labels":{"`+failedLabel+`":"`+kube.FailedConfigHash("rendered-worker-2")+`"}}}`)
		}, "refused update of nodes " + nodeB + ": the daemon of node " + nodeA + " may only write its own Node"},
		{"FailedConfigLabelNotAHash", func() error {
			return patchNode(ctx, k, nodeA, `{"metadata":{"labels":{"`+failedLabel+`":"rendered-worker-2"}}}`)
		}, "must not change the Node's labels but " + failedLabel + " (32 lowercase hex digits)"},
		{"Taints", func() error {
			return patchNode(ctx, k, nodeA, `{"spec":{"taints":[{"key":"x","effect":"NoSchedule"}]}}`)
		}, "must not change the Node's taints"},
		{"SteeringTaintNoSchedule", func() error {
			return patchNode(ctx, k, nodeA, `{"spec":{"taints":[{"key":"nodeconfd.io/update-pending","effect":"NoSchedule"}]}}`)
		}, "but its own nodeconfd.io/update-pending:PreferNoSchedule"},
		{"OtherAnnotation", func() error {
			return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"example.com/owner":"me"}}}`)
		}, "may change only the annotations machineconfiguration.openshift.io/state"},
		// A node cannot grant itself the reboot the controller grants.
		{"RebootGrant", func() error {
			return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"nodeconfd.io/reboot-requested":"x","nodeconfd.io/reboot-granted":"x"}}}`)
		}, "may change only the annotations machineconfiguration.openshift.io/state"},
		{"RebootRequestOfNodeB", func() error {
			return patchNode(ctx, k, nodeB, `{"metadata":{"annotations":{"nodeconfd.io/reboot-requested":"x"}}}`)
		}, "may only write its own Node"},
		// An administrator's request: the daemon may remove it, never make one.
		{"ReapplyAnnotation", func() error {
			return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"nodeconfd.io/reapply":"me"}}}`)
		}, "may change only the annotations machineconfiguration.openshift.io/state"},
		{"RetryAnnotation", func() error {
			return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/retryFailedConfig":"1"}}}`)
		}, "may change only the annotations machineconfiguration.openshift.io/state"},
		{"ProviderID", func() error { return patchNode(ctx, k, nodeA, `{"spec":{"providerID":"x://y"}}`) },
			"may change only spec.unschedulable and its own annotations"},
		{"Finalizers", func() error { return patchNode(ctx, k, nodeA, `{"metadata":{"finalizers":["example.com/keep"]}}`) },
			"may change only spec.unschedulable and its own annotations"},
		{"CreateMachineConfigNodeB", func() error {
			mcn := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "policy-c"}, Spec: mcfgv1.MachineConfigNodeSpec{
				Node: mcfgv1.MCOObjectReference{Name: "policy-c"}, Pool: mcfgv1.MCOObjectReference{Name: "worker"},
				ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: "rendered-worker-1"}}}
			_, err := m.MachineconfigurationV1().MachineConfigNodes().Create(ctx, mcn, metav1.CreateOptions{})
			return err
		}, "refused create of machineconfignodes policy-c: the daemon of node " + nodeA + " may only write the MachineConfigNode " + nodeA},
		{"MachineConfigNodeOwnedByNodeB", func() error {
			mcn := status.NewMCN(nodeA, "worker", "rendered-worker-1")
			mcn.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeB, UID: "b"}}
			_, err := m.MachineconfigurationV1().MachineConfigNodes().Create(ctx, mcn, metav1.CreateOptions{})
			return err
		}, "the owner of MachineConfigNode " + nodeA + " may only be Node " + nodeA},
		// A failure report only for the config the node is given: another would hold back
		// every node given that config.
		{"FailedConfigOfAnotherConfig", func() error {
			return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/failedConfig":"rendered-worker-7"}}}`)
		}, "failedConfig may only name the node's own desiredConfig (rendered-worker-1)"},
		// Another's Event (the kubelet's, node B's Warning) cannot be rewritten into one about
		// its own node.
		{"RewriteEventOfNodeB", func() error {
			ev, err := b.admin.CoreV1().Events("default").Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{GenerateName: "b-", Namespace: "default"},
				InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: nodeB, APIVersion: "v1"},
				Reason:         "Rebooted", Message: "node B's own Event", Type: corev1.EventTypeWarning,
			}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			_, err = k.CoreV1().Events("default").Patch(ctx, ev.Name, types.MergePatchType,
				[]byte(`{"involvedObject":{"name":"`+nodeA+`"},"message":"rewritten"}`), metav1.PatchOptions{})
			return err
		}, "may only write Events about its own Node or MachineConfigNode"},
		{"RewriteKubeletEventOfNodeA", func() error {
			ev, err := b.admin.CoreV1().Events("default").Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{GenerateName: "a-", Namespace: "default"},
				InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: nodeA, APIVersion: "v1"},
				Source:         corev1.EventSource{Component: "kubelet", Host: nodeA},
				Reason:         "NodeNotReady", Message: "the kubelet's Event", Type: corev1.EventTypeWarning,
			}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			_, err = k.CoreV1().Events("default").Patch(ctx, ev.Name, types.MergePatchType,
				[]byte(`{"message":"all is well","type":"Normal"}`), metav1.PatchOptions{})
			return err
		}, "may only write Events about its own Node or MachineConfigNode"},
		{"EventAboutNodeB", func() error { return event(ctx, k, "Node", nodeB) },
			"may only write Events about its own Node or MachineConfigNode, not Node " + nodeB},
		{"EventAboutMachineConfigNodeB", func() error { return event(ctx, k, "MachineConfigNode", nodeB) },
			"not MachineConfigNode " + nodeB},
		{"EvictPodOnNodeB", func() error { return evict(ctx, k, "web-b") },
			"refused eviction of pod default/web-b: it runs on node " + nodeB + ", and the daemon of node " + nodeA + " may only evict pods of its own node"},
	}
}

// ownWrites makes the daemon's own writes for node A, through its adapters where it has them.
func ownWrites(ctx context.Context, t *testing.T, b *bed) {
	api, err := kubeapi.NewAPI(b.bound)
	if err != nil {
		t.Fatal(err)
	}
	c := &kube.Client{API: api, NodeName: nodeA}
	node, err := b.admin.CoreV1().Nodes().Get(ctx, nodeA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mcn, _, err := c.EnsureMCN(ctx, status.NewMCN(nodeA, "worker", "rendered-worker-1"), node)
	if err != nil {
		t.Fatalf("creating MachineConfigNode %s owned by its Node: %v", nodeA, err)
	}
	if len(mcn.OwnerReferences) != 1 || mcn.OwnerReferences[0].UID != node.UID {
		t.Errorf("MachineConfigNode %s's owners %+v, want Node %s (uid %s)", nodeA, mcn.OwnerReferences, nodeA, node.UID)
	}
	if _, err := c.SyncSpec(ctx, mcn, node, "worker", "rendered-worker-2"); err != nil {
		t.Errorf("patching the spec of MachineConfigNode %s: %v", nodeA, err)
	}
	if err := c.WriteStatus(ctx, status.Snapshot{Conditions: status.Initial(metav1.NewTime(time.Now().Truncate(time.Second))),
		ObservedGeneration: 2}); err != nil {
		t.Errorf("writing the status of MachineConfigNode %s: %v", nodeA, err)
	}
	// An administrator's reapply request, removed by the daemon as its update starts.
	if err := patchNode(ctx, b.admin, nodeA, `{"metadata":{"annotations":{"nodeconfd.io/reapply":"alice: drift"}}}`); err != nil {
		t.Fatal(err)
	}
	if err := c.ClearReapply(ctx, "alice: drift"); err != nil {
		t.Errorf("removing the reapply request: %v", err)
	}
	if n, err := b.admin.CoreV1().Nodes().Get(ctx, nodeA, metav1.GetOptions{}); err != nil || n.Annotations[names.Reapply] != "" {
		t.Errorf("the reapply request is still there (%v)", err)
	}
	if err := c.SetNodeState(ctx, "rendered-worker-1", "Working", "updating"); err != nil {
		t.Errorf("writing the state annotations of node %s: %v", nodeA, err)
	}
	d := &drain.Drainer{Client: api, NodeName: nodeA, Log: zap.NewNop()}
	if _, err := d.Cordon(ctx); err != nil {
		t.Errorf("cordoning: %v", err)
	}
	if err := d.Uncordon(ctx); err != nil {
		t.Errorf("uncordoning: %v", err)
	}
	// The steering taint, on and off, beside an administrator's taint that stays.
	if err := patchNode(ctx, b.admin, nodeA, `{"spec":{"taints":[{"key":"example.com/dedicated","value":"db","effect":"NoSchedule"}]}}`); err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{true, false} {
		if err := d.Steer(ctx, on); err != nil {
			t.Errorf("steering taint on=%v: %v", on, err)
		}
		n, err := b.admin.CoreV1().Nodes().Get(ctx, nodeA, metav1.GetOptions{})
		if err != nil || drain.HasSteerTaint(n) != on || len(n.Spec.Taints) != map[bool]int{true: 2, false: 1}[on] ||
			n.Spec.Taints[0].Key != "example.com/dedicated" {
			t.Errorf("taints after steering on=%v: %+v (%v)", on, n.Spec.Taints, err)
		}
	}
	if err := c.SetNodeState(ctx, "", "Done", ""); err != nil {
		t.Errorf("writing the state annotations of node %s: %v", nodeA, err)
	}
	// The health gate's failed config is the daemon's (its own desired config); the retry
	// annotation is the administrator's.
	if err := c.SetFailedConfig(ctx, "rendered-worker-1"); err != nil {
		t.Errorf("writing the failedConfig annotation of node %s: %v", nodeA, err)
	}
	if err := c.ClearFailedConfig(ctx); err != nil {
		t.Errorf("removing the failedConfig annotation of node %s: %v", nodeA, err)
	}
	// The label alone, as the daemon restores it (the annotation written by the daemon).
	if err := patchNode(ctx, kubernetes.NewForConfigOrDie(b.bound), nodeA,
		`{"metadata":{"annotations":{"machineconfiguration.openshift.io/failedConfig":"rendered-worker-1"}}}`); err != nil {
		t.Errorf("writing the failedConfig annotation alone on node %s: %v", nodeA, err)
	}
	if n, err := b.admin.CoreV1().Nodes().Get(ctx, nodeA, metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if patched, err := c.SyncFailedConfigLabel(ctx, n); err != nil || !patched {
		t.Errorf("restoring the failedConfigHash label of node %s: patched %v, %v", nodeA, patched, err)
	}
	if err := c.ClearFailedConfig(ctx); err != nil {
		t.Errorf("removing the failedConfig annotation of node %s: %v", nodeA, err)
	}
	// Its own node's reboot request, asked and answered (the grant is the controller's).
	if err := c.RequestReboot(ctx, "sentinel /run/reboot-required written 2026-12-04T10:00:00Z"); err != nil {
		t.Errorf("asking for a reboot of node %s: %v", nodeA, err)
	}
	if err := c.ClearRebootRequest(ctx, "sentinel /run/reboot-required written 2026-12-04T10:00:00Z"); err != nil {
		t.Errorf("clearing the reboot request of node %s: %v", nodeA, err)
	}
	if n, err := b.admin.CoreV1().Nodes().Get(ctx, nodeA, metav1.GetOptions{}); err != nil || n.Annotations[names.RebootRequested] != "" {
		t.Errorf("node %s's reboot request after clearing it: %q (%v)", nodeA, n.Annotations[names.RebootRequested], err)
	}
	k := kubernetes.NewForConfigOrDie(b.bound)
	if err := event(ctx, k, "Node", nodeA); err != nil {
		t.Errorf("an Event about node %s: %v", nodeA, err)
	}
	if err := event(ctx, k, "MachineConfigNode", nodeA); err != nil {
		t.Errorf("an Event about MachineConfigNode %s: %v", nodeA, err)
	}
	// A repeat raises the count of its own Event, as kubeapi.Events does.
	evs, err := b.admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + nodeA})
	if err != nil || len(evs.Items) == 0 {
		t.Fatalf("listing its Events: %v", err)
	}
	for _, ev := range evs.Items {
		if ev.Source.Component != "nodeconfd" {
			continue
		}
		if _, err := k.CoreV1().Events("default").Patch(ctx, ev.Name, types.MergePatchType, []byte(`{"count":2}`),
			metav1.PatchOptions{}); err != nil {
			t.Errorf("counting a repeat of its own Event %s: %v", ev.Name, err)
		}
		break
	}
	if err := evict(ctx, k, "web-a"); err != nil {
		t.Errorf("evicting pod default/web-a of node %s: %v", nodeA, err)
	}
}

func patchNode(ctx context.Context, k kubernetes.Interface, name, patch string) error {
	_, err := k.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

func event(ctx context.Context, k kubernetes.Interface, kind, name string) error {
	now := metav1.Now()
	_, err := k.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: name + "."},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name},
		Reason:         "Test", Message: "test", Type: corev1.EventTypeNormal, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "nodeconfd", Host: nodeA},
	}, metav1.CreateOptions{})
	return err
}

func evict(ctx context.Context, k kubernetes.Interface, name string) error {
	return k.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}})
}

// wantDenied checks err is a Forbidden refusal by a nodeconfd policy whose message has want.
func wantDenied(err error, want string) error {
	if err == nil {
		return fmt.Errorf("allowed, want refused with %q", want)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "nodeconfd-own-node") || !strings.Contains(err.Error(), want) {
		return fmt.Errorf("%v, want Forbidden by nodeconfd-own-node with %q", err, want)
	}
	return nil
}
