package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	opv1 "github.com/openshift/api/operator/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The controller's ServiceAccount, with a token bound to its pod, may write what it decides
// and nothing else: a node's desiredConfig (to a rendered config's name), a pool's
// spec.configuration and status, new MachineConfigs, the delete of a rendered config it created.
// RBAC refuses what it never does (updating MachineConfigs, creating nodes); the policy
// nodeconfd-controller refuses every other change of a Node or a pool, and the delete of any
// other MachineConfig, naming what it may change.
func TestControllerWritesOnlyItsDecisions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	b := start(ctx, t)
	ctlPod, err := b.admin.CoreV1().Pods(namespace).Create(ctx, pod("nodeconfd-controller-x", nodeB, "nodeconfd-controller"),
		metav1.CreateOptions{})
	check(t, err)
	cfg, err := b.cp.RestConfigForPod(ctx, ctlPod)
	check(t, err)
	k, m := kubernetes.NewForConfigOrDie(cfg), mcfgclient.NewForConfigOrDie(cfg)
	pools := m.MachineconfigurationV1().MachineConfigPools()

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("policies' type checking:\n%s", kubectl(t, b.cp, "get", "validatingadmissionpolicies",
				"-o", `jsonpath={range .items[*]}{.metadata.name}: {.status}{"\n"}{end}`))
		}
	})
	const denied = "nodeconfd-controller: refused"
	// Each probe writes a new value: a probe let through before the policy was loaded would
	// make the same write again a no-op, which the policy rightly allows.
	probe := 0
	eventually(ctx, t, "policy in force", func() error {
		probe++
		return wantDeniedBy(patchNode(ctx, k, nodeA, fmt.Sprintf(`{"metadata":{"labels":{"x":"y%d"}}}`, probe)), denied, "")
	})

	t.Run("Allowed", func(t *testing.T) {
		if err := patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/desiredConfig":"rendered-worker-2"}}}`); err != nil {
			t.Errorf("setting node %s's desiredConfig: %v", nodeA, err)
		}
		if _, err := m.MachineconfigurationV1().MachineConfigs().Create(ctx, rendered(rendered2, "worker"), metav1.CreateOptions{}); err != nil {
			t.Errorf("creating a rendered config: %v", err)
		}
		if _, err := pools.Patch(ctx, "worker", types.MergePatchType,
			[]byte(`{"spec":{"configuration":{"name":"rendered-worker-2"}}}`), metav1.PatchOptions{}); err != nil {
			t.Errorf("setting the worker pool's spec.configuration: %v", err)
		}
		if _, err := pools.Patch(ctx, "worker", types.MergePatchType,
			[]byte(`{"status":{"machineCount":2}}`), metav1.PatchOptions{}, "status"); err != nil {
			t.Errorf("writing the worker pool's status: %v", err)
		}
		// A reboot grant that repeats the node's request, and its removal.
		if err := patchNode(ctx, b.admin, nodeB, `{"metadata":{"annotations":{"nodeconfd.io/reboot-requested":"alice: kernel"}}}`); err != nil {
			t.Fatal(err)
		}
		if err := patchNode(ctx, k, nodeB, `{"metadata":{"annotations":{"nodeconfd.io/reboot-granted":"alice: kernel"}}}`); err != nil {
			t.Errorf("granting node %s its reboot: %v", nodeB, err)
		}
		if err := patchNode(ctx, k, nodeB, `{"metadata":{"annotations":{"nodeconfd.io/reboot-granted":null}}}`); err != nil {
			t.Errorf("removing node %s's reboot grant: %v", nodeB, err)
		}
	})

	for _, c := range []struct {
		name, want string
		do         func() error
	}{
		{"NodeLabel", "may change only the node's desiredConfig and reboot-granted annotations",
			func() error {
				return patchNode(ctx, k, nodeA, `{"metadata":{"labels":{"node-role.kubernetes.io/master":""}}}`)
			}},
		{"NodeStateAnnotation", "may change only the node's desiredConfig and reboot-granted annotations",
			func() error {
				return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/currentConfig":"rendered-worker-2"}}}`)
			}},
		{"Cordon", "may change only the node's desiredConfig and reboot-granted annotations",
			func() error { return patchNode(ctx, k, nodeA, `{"spec":{"unschedulable":true}}`) }},
		{"DesiredNotRendered", "desiredConfig must name a rendered config",
			func() error {
				return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/desiredConfig":"99-worker-ssh"}}}`)
			}},
		{"RebootGrantUnasked", "a reboot grant must repeat the node's reboot-requested annotation",
			func() error {
				return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"nodeconfd.io/reboot-granted":"x"}}}`)
			}},
		{"RebootGrantOfAnotherRequest", "a reboot grant must repeat the node's reboot-requested annotation",
			func() error {
				return patchNode(ctx, k, nodeB, `{"metadata":{"annotations":{"nodeconfd.io/reboot-granted":"bob: other"}}}`)
			}},
		{"RebootRequest", "may change only the node's desiredConfig and reboot-granted annotations",
			func() error {
				return patchNode(ctx, k, nodeA, `{"metadata":{"annotations":{"nodeconfd.io/reboot-requested":"x"}}}`)
			}},
		{"NodeOwnerReference", "may change only the node's desiredConfig and reboot-granted annotations",
			func() error {
				return patchNode(ctx, k, nodeA, `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"00000000-0000-0000-0000-000000000000"}]}}`)
			}},
		{"NodeFinalizer", "may change only the node's desiredConfig and reboot-granted annotations",
			func() error { return patchNode(ctx, k, nodeA, `{"metadata":{"finalizers":["example.com/keep"]}}`) }},
		{"Fragment", "must be named rendered-<pool>-<32 hex digits>",
			func() error { return createConfig(ctx, m, rendered("99-worker-evil", "worker")) }},
		{"RenderedOfAnotherPool", "be owned by that MachineConfigPool",
			func() error { return createConfig(ctx, m, rendered(rendered2, "master")) }},
		{"RenderedUnowned", "be owned by that MachineConfigPool",
			func() error {
				mc := rendered("rendered-worker-"+strings.Repeat("b", 32), "worker")
				mc.OwnerReferences = nil
				return createConfig(ctx, m, mc)
			}},
		{"RenderedLabelled", "carry no labels",
			func() error {
				mc := rendered("rendered-worker-"+strings.Repeat("c", 32), "worker")
				mc.Labels = map[string]string{"machineconfiguration.openshift.io/role": "worker"}
				return createConfig(ctx, m, mc)
			}},
		{"PoolFinalizer", "may change only the pool's spec.configuration",
			func() error {
				_, err := pools.Patch(ctx, "worker", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/keep"]}}`), metav1.PatchOptions{})
				return err
			}},
		{"PoolPaused", "may change only the pool's spec.configuration",
			func() error {
				_, err := pools.Patch(ctx, "worker", types.MergePatchType, []byte(`{"spec":{"paused":true}}`), metav1.PatchOptions{})
				return err
			}},
		{"PoolMaxUnavailable", "may change only the pool's spec.configuration",
			func() error {
				_, err := pools.Patch(ctx, "worker", types.MergePatchType, []byte(`{"spec":{"maxUnavailable":"100%"}}`), metav1.PatchOptions{})
				return err
			}},
		// The daemons check every rendered config against the MachineConfigs this selector
		// selects (daemon.Provenance): the controller's token must not move it.
		{"PoolMachineConfigSelector", "may change only the pool's spec.configuration",
			func() error {
				_, err := pools.Patch(ctx, "worker", types.MergePatchType,
					[]byte(`{"spec":{"machineConfigSelector":{"matchLabels":{"x":"y"}}}}`), metav1.PatchOptions{})
				return err
			}},
		{"PoolSelector", "may change only the pool's spec.configuration",
			func() error {
				_, err := pools.Patch(ctx, "worker", types.MergePatchType,
					[]byte(`{"spec":{"nodeSelector":{"matchLabels":{"x":"y"}}}}`), metav1.PatchOptions{})
				return err
			}},
	} {
		t.Run("Denied/"+c.name, func(t *testing.T) {
			if err := wantDeniedBy(c.do(), denied, c.want); err != nil {
				t.Error(err)
			}
		})
	}

	// What RBAC alone refuses: it never changes a MachineConfig, never deletes a Node or a pool.
	t.Run("RBAC", func(t *testing.T) {
		if _, err := m.MachineconfigurationV1().MachineConfigs().Patch(ctx, rendered2, types.MergePatchType,
			[]byte(`{"spec":{"osImageURL":"x"}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("changing a MachineConfig: %v, want Forbidden", err)
		}
		if err := k.CoreV1().Nodes().Delete(ctx, nodeA, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("deleting a Node: %v, want Forbidden", err)
		}
		if err := pools.Delete(ctx, "worker", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("deleting a pool: %v, want Forbidden", err)
		}
		ev := poolEvent("worker", "RenderedConfig", "x")
		if _, err := k.CoreV1().Events("kube-system").Create(ctx, ev, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("an Event outside the default namespace: %v, want Forbidden", err)
		}
		if _, err := k.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Errorf("an Event in the default namespace (where the pools' go): %v", err)
		}
		if _, err := k.CoordinationV1().Leases(namespace).Get(ctx, "another", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("reading a Lease other than its own: %v, want Forbidden", err)
		}
	})

	// The pruning of rendered configs (--rendered-config-retention): the controller deletes a
	// rendered config it created (its marker: the pool as controlling owner and the name
	// rendered-<pool>-<hash>, controller/prune.CreatedBy), and no other MachineConfig.
	t.Run("Delete", func(t *testing.T) {
		mcs := b.mcfg.MachineconfigurationV1().MachineConfigs()
		const refused = "deletes only rendered configs it created"
		notController := rendered("rendered-worker-"+strings.Repeat("d", 32), "worker")
		notController.OwnerReferences[0].Controller = nil
		unowned := rendered("rendered-worker-"+strings.Repeat("e", 32), "worker")
		unowned.OwnerReferences = nil
		fragment := rendered("99-worker-ssh", "worker")
		fragment.OwnerReferences = nil
		fragment.Labels = map[string]string{"machineconfiguration.openshift.io/role": "worker"}
		for _, c := range []struct {
			name string
			mc   *mcfgv1.MachineConfig
		}{
			{"Fragment", fragment},
			{"FragmentOwnedByThePool", rendered("99-worker-owned", "worker")},
			{"RenderedUnowned", unowned},
			{"RenderedOwnedNotAsController", notController},
			{"RenderedOfAnotherPoolsName", rendered("rendered-master-"+strings.Repeat("f", 32), "worker")},
			{"RenderedShortHash", rendered("rendered-worker-abc", "worker")},
		} {
			t.Run("Denied/"+c.name, func(t *testing.T) {
				if _, err := mcs.Create(ctx, c.mc, metav1.CreateOptions{}); err != nil {
					t.Fatalf("creating %s as admin: %v", c.mc.Name, err)
				}
				if err := wantDeniedBy(m.MachineconfigurationV1().MachineConfigs().Delete(ctx, c.mc.Name, metav1.DeleteOptions{}),
					denied, refused); err != nil {
					t.Error(err)
				}
				if _, err := mcs.Get(ctx, c.mc.Name, metav1.GetOptions{}); err != nil {
					t.Errorf("%s after the refused delete: %v", c.mc.Name, err)
				}
			})
		}
		t.Run("Allowed", func(t *testing.T) {
			got, err := mcs.Get(ctx, rendered2, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// With the preconditions the controller sends.
			if err := m.MachineconfigurationV1().MachineConfigs().Delete(ctx, rendered2, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &got.UID, ResourceVersion: &got.ResourceVersion}}); err != nil {
				t.Errorf("deleting rendered config %s it created: %v", rendered2, err)
			}
			if _, err := mcs.Get(ctx, rendered2, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s after its delete: %v, want NotFound", rendered2, err)
			}
		})
	})

	// The MachineConfiguration named cluster: the controller reads it and writes the merged node
	// disruption policy, the generation and the conditions to its status; nothing else of it,
	// nothing of another one.
	t.Run("MachineConfiguration", func(t *testing.T) {
		adminAPI, err := kubeapi.NewAPI(b.cp.RestConfig())
		check(t, err)
		admin, err := kubeapi.MachineConfigurations(adminAPI)
		check(t, err)
		ctlAPI, err := kubeapi.NewAPI(cfg)
		check(t, err)
		ctl, err := kubeapi.MachineConfigurations(ctlAPI)
		check(t, err)
		for _, name := range []string{"cluster", "other"} {
			mc := &opv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
			mc.Spec.ManagementState = "Managed"
			mc.Spec.NodeDisruptionPolicy.SSHKey.Actions = []opv1.NodeDisruptionPolicySpecAction{{Type: opv1.NoneSpecAction}}
			_, err := admin.Create(ctx, mc, metav1.CreateOptions{})
			check(t, err)
		}
		status := func(name, body string) error {
			_, err := ctl.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status")
			return err
		}
		if _, err := ctl.Get(ctx, "cluster", metav1.GetOptions{}); err != nil {
			t.Errorf("reading MachineConfiguration cluster: %v", err)
		}
		if _, err := ctl.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=cluster"}); err != nil {
			t.Errorf("listing MachineConfiguration cluster by name: %v", err)
		}
		if err := status("cluster", `{"status":{"observedGeneration":1,"conditions":[{"type":"Degraded","status":"False",`+
			`"reason":"NodeDisruptionPolicyMerged","message":"x","lastTransitionTime":"2026-01-01T00:00:00Z"}],`+
			`"nodeDisruptionPolicyStatus":{"clusterPolicies":{"files":[{"path":"/etc/a","actions":[{"type":"Special"}]}],`+
			`"sshkey":{"actions":[{"type":"None"}]}}}}}`); err != nil {
			t.Errorf("writing MachineConfiguration cluster's node disruption policy status: %v", err)
		}
		// What the policy refuses: the status' boot image fields.
		err = status("cluster", `{"status":{"managedBootImagesStatus":{"machineManagers":[{"resource":"machinesets",`+
			`"apiGroup":"machine.openshift.io","selection":{"mode":"All"}}]}}}`)
		if err := wantDeniedBy(err, denied, "may change only the status of MachineConfiguration cluster"); err != nil {
			t.Errorf("the status' managedBootImagesStatus: %v", err)
		}
		// What RBAC refuses: the spec, another object, its deletion, every object's list.
		if _, err := ctl.Patch(ctx, "cluster", types.MergePatchType,
			[]byte(`{"spec":{"nodeDisruptionPolicy":{"sshkey":{"actions":[{"type":"Reboot"}]}}}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("changing MachineConfiguration cluster's spec: %v, want Forbidden", err)
		}
		if err := status("other", `{"status":{"observedGeneration":1}}`); !apierrors.IsForbidden(err) {
			t.Errorf("writing MachineConfiguration other's status: %v, want Forbidden", err)
		}
		if _, err := ctl.Get(ctx, "other", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("reading MachineConfiguration other: %v, want Forbidden", err)
		}
		if _, err := ctl.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing every MachineConfiguration: %v, want Forbidden", err)
		}
		if err := ctl.Delete(ctx, "cluster", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("deleting MachineConfiguration cluster: %v, want Forbidden", err)
		}
	})
}

// rendered2 is a rendered config's name as the controller makes them.
var rendered2 = "rendered-worker-" + strings.Repeat("a", 32)

// rendered is a MachineConfig named name and owned by pool, as the controller creates its
// rendered configs.
func rendered(name, pool string) *mcfgv1.MachineConfig {
	yes := true
	return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfigPool", Name: pool,
		UID: "00000000-0000-0000-0000-000000000001", Controller: &yes}}}}
}

func createConfig(ctx context.Context, m mcfgclient.Interface, mc *mcfgv1.MachineConfig) error {
	_, err := m.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{})
	return err
}

// wantDeniedBy checks err is a Forbidden from the policy whose text starts with by, with want.
func wantDeniedBy(err error, by, want string) error {
	if err == nil {
		return errAllowed
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), by) || !strings.Contains(err.Error(), want) {
		return &wrongRefusal{err, by + "…" + want}
	}
	return nil
}

var errAllowed = &wrongRefusal{nil, "a refusal"}

type wrongRefusal struct {
	err  error
	want string
}

func (w *wrongRefusal) Error() string {
	if w.err == nil {
		return "allowed, want " + w.want
	}
	return w.err.Error() + ", want Forbidden with " + w.want
}
