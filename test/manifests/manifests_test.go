// Package manifests tests the files in manifests/ against a real kube-apiserver: that kubectl
// accepts all of them, that the generated CRDs are up to date and behave as the daemon
// expects, and that the daemon's RBAC grants what it needs and no more.
package manifests

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// repoRoot is the repository root, relative to this package.
const repoRoot = "../.."

// start runs a control plane with the CRDs of manifests/ installed.
func start(ctx context.Context, t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir(), Log: controlplane.TestLog{T: t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	return cp
}

func TestGeneratedCRDsUpToDate(t *testing.T) {
	cmd := exec.Command("go", "run", "./hack/gencrds", "-check")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./hack/gencrds -check: %v\n%s", err, out)
	}
}

func TestKubectlApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := start(ctx, t)
	dir := filepath.Join(repoRoot, "manifests")

	kubectl(t, cp, "apply", "--server-side", "-f", dir)
	// Every object is readable back, under the name the file gives it.
	got := strings.Fields(kubectl(t, cp, "get", "-f", dir, "-o", "name"))
	want := []string{
		"customresourcedefinition.apiextensions.k8s.io/machineconfignodes.machineconfiguration.openshift.io",
		"customresourcedefinition.apiextensions.k8s.io/machineconfigpools.machineconfiguration.openshift.io",
		"customresourcedefinition.apiextensions.k8s.io/machineconfigs.machineconfiguration.openshift.io",
		"customresourcedefinition.apiextensions.k8s.io/machineconfigurations.operator.openshift.io",
		"namespace/nodeconfd",
		"serviceaccount/nodeconfd",
		"clusterrole.rbac.authorization.k8s.io/nodeconfd",
		"clusterrolebinding.rbac.authorization.k8s.io/nodeconfd",
		"role.rbac.authorization.k8s.io/nodeconfd",
		"rolebinding.rbac.authorization.k8s.io/nodeconfd",
		"daemonset.apps/nodeconfd",
		"validatingadmissionpolicy.admissionregistration.k8s.io/nodeconfd-own-node",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/nodeconfd-own-node",
		"validatingadmissionpolicy.admissionregistration.k8s.io/nodeconfd-own-node-status",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/nodeconfd-own-node-status",
		"validatingadmissionpolicy.admissionregistration.k8s.io/nodeconfd-own-node-evictions",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/nodeconfd-own-node-evictions",
		"validatingadmissionpolicy.admissionregistration.k8s.io/nodeconfd-surge",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/nodeconfd-surge",
		"validatingadmissionpolicy.admissionregistration.k8s.io/nodeconfd-surge-controller",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/nodeconfd-surge-controller",
		"serviceaccount/nodeconfd-controller",
		"clusterrole.rbac.authorization.k8s.io/nodeconfd-controller",
		"clusterrolebinding.rbac.authorization.k8s.io/nodeconfd-controller",
		"role.rbac.authorization.k8s.io/nodeconfd-controller",
		"rolebinding.rbac.authorization.k8s.io/nodeconfd-controller",
		"role.rbac.authorization.k8s.io/nodeconfd-controller-events",
		"rolebinding.rbac.authorization.k8s.io/nodeconfd-controller-events",
		"validatingadmissionpolicy.admissionregistration.k8s.io/nodeconfd-controller",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/nodeconfd-controller",
		"validatingadmissionpolicy.admissionregistration.k8s.io/nodeconfd-controller-records",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/nodeconfd-controller-records",
		"deployment.apps/nodeconfd-controller",
		"machineconfigpool.machineconfiguration.openshift.io/worker",
		"machineconfigpool.machineconfiguration.openshift.io/master",
		"prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/nodeconfd-evictions",
		"flowschema.flowcontrol.apiserver.k8s.io/nodeconfd-evictions",
		"clusterrole.rbac.authorization.k8s.io/nodeconfd-metrics-reader",
		"clusterrole.rbac.authorization.k8s.io/nodeconfd-metrics-auth",
		"clusterrolebinding.rbac.authorization.k8s.io/nodeconfd-metrics-auth",
		"service/nodeconfd-metrics",
		"service/nodeconfd-controller-metrics",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kubectl get -f manifests/ -o name:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// What is stored is what the files say (kubectl diff exits 1 on a difference).
	kubectl(t, cp, "diff", "--server-side", "-f", dir)
}

// kubectl runs kubectl as admin and returns its stdout.
func kubectl(t *testing.T, cp *controlplane.ControlPlane, args ...string) string {
	t.Helper()
	return cp.MustKubectl(t, args...)
}
