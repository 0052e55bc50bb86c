package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// The node disruption policy on a real systemd node, read from the
// cluster's MachineConfiguration cluster as a daemon reads it: a unit and
// a file with Restart rules are restarted, not rebooted; a kubelet CA
// change needs nothing; a safe registries.conf change reloads CRI-O
// without a drain, an unsafe one drains first; a policy the CRD refuses
// never lands, and one only the daemon refuses fails prepare naming the
// field (a daemon with no good policy) until it is fixed.
//
// Not parallel: the object is the cluster's, read by every daemon without
// a policy file; its rules name only this test's paths and unit, and it
// is deleted at the end.
// ndpDir is TestNodeDisruptionPolicy's folder of files with a Restart rule.
const ndpDir = "/etc/ndp-e2e"

func TestNodeDisruptionPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const (
		dir     = ndpDir
		starts  = "/var/lib/ndp-starts"
		regs    = "/etc/containers/registries.conf"
		kubeCA  = "/etc/kubernetes/kubelet-ca.crt"
		appUnit = "ndp-app.service"
	)
	policyWith := func(extraFiles string) string {
		return "  nodeDisruptionPolicy:\n    files:\n    - path: " + dir + "\n      actions: [{type: Restart, restart: {serviceName: " + appUnit + "}}]\n" +
			extraFiles + "    units:\n    - name: " + appUnit + "\n      actions: [{type: DaemonReload}, {type: Restart, restart: {serviceName: " + appUnit + "}}]\n"
	}
	policy := policyWith("")
	applyPolicy(ctx, t, policy)
	t.Cleanup(func() {
		_, _ = bed.Kubectl(context.Background(), "delete", "machineconfiguration", "cluster", "--ignore-not-found")
	})

	unit := "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'echo x >> " + starts + "'\n[Install]\nWantedBy=multi-user.target\n"
	units := `"systemd":{"units":[{"name":"` + appUnit + `","enabled":true,"contents":` + jsonString(unit) + `}]}`
	files := map[string]string{}
	step := func(name string, set map[string]string) {
		for k, v := range set {
			files[k] = v
		}
		copied := map[string]string{}
		for k, v := range files {
			copied[k] = v
		}
		config(t, "rendered-ndp-"+name, ign(copied, units))
	}
	config(t, "rendered-ndp-base", ign(nil))
	n, log := node(t, "ndp", "rendered-ndp-base")
	startCount := func() int { return strings.Count(readNodeFile(t, n, starts), "x") }

	update := func(name, postMsg string, drained bool) {
		t.Helper()
		ndpUpdate(ctx, t, n, log, name, postMsg, drained)
	}

	step("unit", map[string]string{dir + "/app": "1\n"})
	update("unit", "Restarted "+appUnit+"; Reloaded systemd", false)
	if c := startCount(); c < 1 {
		t.Errorf("%s never started", appUnit)
	}
	before := startCount()
	step("app", map[string]string{dir + "/app": "2\n"})
	// plan --node reads the cluster's policy, as the daemon does.
	r := runPlanCmd(ctx, t, []string{"--node", "ndp", "--desired", "rendered-ndp-app", "--kubeconfig", bed.CP.Kubeconfig(),
		"-o", "json", "--allowed-config-pattern", testbed.TestConfigPattern})
	if r.PostAction == nil || strings.Join(r.PostAction.Actions, ",") != "Restart "+appUnit || r.DrainRequired ||
		len(r.Files) != 1 || r.Files[0].Source != "spec.nodeDisruptionPolicy.files[0]" {
		t.Errorf("plan --node: %+v", r)
	}
	update("app", "Restarted "+appUnit, false)
	if msg := log.Condition("UpdateCompatible").Message; msg != r.Summary {
		t.Errorf("UpdateCompatible %q, the plan said %q", msg, r.Summary)
	}
	if c := startCount(); c != before+1 {
		t.Errorf("%s started %d times, want once more than %d", appUnit, c, before)
	}
	step("kubeca", map[string]string{kubeCA: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"})
	update("kubeca", "Changes need no reboot or reload", false)

	step("regsafe", map[string]string{regs: "unqualified-search-registries = [\"docker.io\", \"quay.io\"]\n"})
	update("regsafe", "Reloaded crio.service", false)
	step("regunsafe", map[string]string{regs: "unqualified-search-registries = [\"quay.io\"]\n"})
	update("regunsafe", "Drained; Reloaded crio.service", true)
	if msg := log.Condition("UpdateCompatible").Message; !strings.Contains(msg, "drain required: "+regs) {
		t.Errorf("UpdateCompatible does not say why it drains: %q", msg)
	}

	policyRefusals(ctx, t, n, log, policyWith, func() { step("refused", map[string]string{dir + "/app": "3\n"}) })
}

// ndpUpdate runs the update to rendered-ndp-<name> and checks its post
// action's message, the drain, that the node did not reboot, and that
// CRI-O was reloaded exactly when the message says so.
func ndpUpdate(ctx context.Context, t *testing.T, n *testbed.Node, log *testbed.StatusLog, name, postMsg string, drained bool) {
	t.Helper()
	boots, reloads := n.Sys.Boots(), crioReloads(n)
	if err := n.SetDesired(ctx, "rendered-ndp-"+name); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-ndp-"+name); err != nil {
		t.Fatal(err)
	}
	if got := log.Condition("UpdatePostActionComplete").Message; got != postMsg {
		t.Errorf("%s: post action %q, want %q", name, got, postMsg)
	}
	if got := log.Condition("Drained").Reason != "NotRequired"; got != drained {
		t.Errorf("%s: drained %v, want %v (%s)", name, got, drained, log.Condition("UpdateCompatible").Message)
	}
	if n.Sys.Boots() != boots {
		t.Errorf("%s: the node rebooted", name)
	}
	if wantReload := strings.Contains(postMsg, "crio"); (crioReloads(n) > reloads) != wantReload {
		t.Errorf("%s: CRI-O reloads %d -> %d", name, reloads, crioReloads(n))
	}
}

// policyRefusals: a policy the CRD refuses never lands; one only the
// daemon refuses (a relative path) fails prepare naming the field on a
// daemon that never read a good one, until it is fixed.
func policyRefusals(ctx context.Context, t *testing.T, n *testbed.Node, log *testbed.StatusLog,
	policyWith func(extraFiles string) string, writeConfig func()) {
	t.Helper()
	// The CRD refuses a Restart without its service, naming the field.
	bad := "  nodeDisruptionPolicy:\n    files:\n    - path: " + ndpDir + "\n      actions: [{type: Restart}]\n"
	if out, err := kubectlApply(ctx, bad); err == nil || !strings.Contains(string(out), "restart is required when type is Restart") {
		t.Errorf("the CRD took a Restart without a service: %v\n%s", err, out)
	}
	// A relative path passes the CRD; the daemon refuses it. A daemon
	// started meanwhile has no good policy: prepare refuses, naming it.
	applyPolicy(ctx, t, policyWith("    - path: etc/relative\n      actions: [{type: None}]\n"))
	if err := n.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	if err := n.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	writeConfig()
	if err := n.SetDesired(ctx, "rendered-ndp-refused"); err != nil {
		t.Fatal(err)
	}
	const want = `node disruption policy of MachineConfiguration cluster: spec.nodeDisruptionPolicy.files[1].path`
	if err := log.WaitFor(ctx, "UpdateCompatible", "False", ""); err != nil {
		t.Fatal(err)
	}
	if msg := log.Condition("UpdateCompatible").Message; !strings.Contains(msg, want) || !strings.Contains(msg, `"etc/relative" is not absolute`) {
		t.Errorf("UpdateCompatible = %q, want it to name %s", msg, want)
	}
	if readNodeFile(t, n, ndpDir+"/app") != "2\n" {
		t.Error("a refused update wrote")
	}
	applyPolicy(ctx, t, policyWith("")) // fixed: the retry goes through
	if err := waitCurrent(ctx, log, "rendered-ndp-refused"); err != nil {
		t.Fatal(err)
	}
}

// applyPolicy applies the MachineConfiguration cluster with spec (indented
// two spaces).
func applyPolicy(ctx context.Context, t *testing.T, spec string) {
	t.Helper()
	if out, err := kubectlApply(ctx, spec); err != nil {
		t.Fatalf("applying the MachineConfiguration: %v\n%s", err, out)
	}
}

func kubectlApply(ctx context.Context, spec string) ([]byte, error) {
	p := filepath.Join(os.TempDir(), "ndp-e2e-machineconfiguration.yaml")
	doc := "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata: {name: cluster}\nspec:\n" + spec
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		return nil, err
	}
	return bed.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", p)
}

func crioReloads(n *testbed.Node) int {
	c, _ := n.Sys.CRIOReloads()
	return c
}
