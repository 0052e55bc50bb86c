package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Issue 11: the daemon, with its pod's bound token (not the admin's credentials) and the
// admission policies of manifests/ in force, runs a reboot update (cordon, drain, reboot,
// uncordon; no Lease) and a CRI-O update with no request refused.
func TestUpdatesUnderPolicy(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	config(t, "rendered-pol-a", ign(nil))
	config(t, "rendered-pol-b", ign(map[string]string{"/etc/motd.d/pol": "under the policy\n"},
		`"systemd":{"units":[{"name":"hello.service","enabled":true,"contents":`+jsonString(helloUnit)+`}]}`))
	config(t, "rendered-pol-c", ign(map[string]string{"/etc/motd.d/pol": "under the policy\n",
		"/etc/containers/registries.d/pol.yaml": "docker:\n  example.com: {}\n"},
		`"systemd":{"units":[{"name":"hello.service","enabled":true,"contents":`+jsonString(helloUnit)+`}]}`))
	n, log := node(t, "pol", "rendered-pol-a")
	wantBoundIdentity(ctx, t, n.Kubeconfig, "pol")
	podsOn(t, "pol", 2)

	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-pol-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-pol-b"); err != nil {
		t.Fatal(err)
	}
	wantSeq(t, log.Transitions(from), rebootSequence)
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2 (one reboot)", b)
	}
	if left := podsLeft(t, "pol"); left != 0 {
		t.Errorf("%d pods left on the drained node", left)
	}

	if err := n.SetDesired(ctx, "rendered-pol-c"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-pol-c"); err != nil {
		t.Fatal(err)
	}
	if c, _ := n.Sys.CRIOReloads(); c != 1 {
		t.Errorf("CRI-O reloads = %d, want 1", c)
	}
	wantEvents(t, "pol", "MachineConfigNode", "UpdateCompatible", "Drained", "RebootedNode", "Uncordoned", "ReloadedCRIO")
	wantEvents(t, "pol", "Node", "Cordoned", "Drained", "RebootedNode")
	node := getNode(t, "pol")
	if node.Spec.Unschedulable || node.Annotations["machineconfiguration.openshift.io/state"] != "Done" {
		t.Errorf("node unschedulable=%v state=%q, want uncordoned and Done", node.Spec.Unschedulable,
			node.Annotations["machineconfiguration.openshift.io/state"])
	}
	for _, refused := range []string{"forbidden", "nodeconfd-own-node", "denied request"} {
		if strings.Contains(strings.ToLower(n.DaemonLog()), refused) {
			t.Errorf("the daemon's log shows a refused request (%q):\n%s", refused, n.DaemonLog())
		}
	}
}

// wantBoundIdentity checks the daemon's kubeconfig is its ServiceAccount's token bound to its
// pod on node: the API server sees the node-name claim.
func wantBoundIdentity(ctx context.Context, t *testing.T, kubeconfig, node string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CertData != nil || cfg.BearerToken == "" {
		t.Fatalf("the daemon's kubeconfig %s holds no token (or a client certificate)", kubeconfig)
	}
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx,
		&authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u := review.Status.UserInfo
	if u.Username != "system:serviceaccount:nodeconfd:nodeconfd" || len(u.Extra["authentication.kubernetes.io/node-name"]) != 1 ||
		u.Extra["authentication.kubernetes.io/node-name"][0] != node {
		t.Fatalf("the daemon authenticates as %s with extra %v, want the ServiceAccount bound to a pod on node %s",
			u.Username, u.Extra, node)
	}
}

// Issue 11: a desired config that is not a rendered config of the node's pool (a fragment, or
// another pool's) is refused in prepare, naming the config, with nothing touched; the default
// --allowed-config-pattern is in force here (the test bed widens it for other tests).
func TestForeignConfigRefused(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	config(t, "rendered-pr1-base", ign(nil))
	n, log := nodeOpts(t, "pr1", "rendered-pr1-base", testbed.NodeOptions{ExtraArgs: []string{"--pool", "pr1",
		"--allowed-config-pattern", plan.DefaultConfigPattern}})
	boots := n.Sys.Boots()
	for _, name := range []string{"99-pr1-ssh", "rendered-master-pr1"} {
		t.Run(name, func(t *testing.T) {
			config(t, name, ign(map[string]string{"/etc/nodeconfd-" + name: "must not be written\n"}))
			if err := n.SetDesired(ctx, name); err != nil {
				t.Fatal(err)
			}
			if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
				t.Fatal(err)
			}
			c := log.Condition("UpdateCompatible")
			want := `MachineConfig "` + name + `": metadata.name: not a rendered config of this node's pool "pr1"`
			if c.Status != "False" || !strings.Contains(c.Message, want) {
				t.Errorf("UpdateCompatible = %s %q, want False with %q", c.Status, c.Message, want)
			}
			node := getNode(t, "pr1")
			if st := node.Annotations["machineconfiguration.openshift.io/state"]; st != "Degraded" {
				t.Errorf("state annotation %q, want Degraded", st)
			}
			if node.Spec.Unschedulable {
				t.Error("node cordoned for a refused config")
			}
			if _, err := os.Lstat(n.Sys.Root + "/etc/nodeconfd-" + name); err == nil {
				t.Errorf("the refused config's file was written")
			}
			if err := n.SetDesired(ctx, "rendered-pr1-base"); err != nil {
				t.Fatal(err)
			}
			if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
				t.Fatal(err)
			}
		})
	}
	if b := n.Sys.Boots(); b != boots {
		t.Errorf("boots = %d, want %d (no reboot)", b, boots)
	}
}
