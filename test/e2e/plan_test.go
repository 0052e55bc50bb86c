package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/preview"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// `nodeconfd plan` on pairs of rendered configs, from the files `kubectl get
// mc -o yaml` prints and from the cluster (--node), agrees with what the
// update then does: the same summary in UpdateCompatible, the same post
// action run (each kind: None, DaemonReload, RestartUnit, ReloadCRIO,
// Reboot), a drain exactly when it said so, and for a refusal the same
// message, node state and fields.
func TestPlanAgreesWithUpdate(t *testing.T) {
	t.Parallel()
	const dir = "/etc/nodeconfd-plan"
	policy := "nodeDisruptionPolicy:\n  files:\n  - {path: " + dir + "/none/, actions: [{type: None}]}\n" +
		"  - {path: " + dir + "/restart/, actions: [{type: Restart, restart: {serviceName: plan-app.service}}]}\n" +
		"  - {path: " + dir + "/dr/, actions: [{type: DaemonReload}]}\n"
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	config(t, "rendered-pl1-base", ign(nil))
	n, log := nodeOpts(t, "pl1", "rendered-pl1-base", testbed.NodeOptions{ExtraArgs: []string{"--post-action-policy", policyFile}})
	unit := "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
	units := `"systemd":{"units":[{"name":"plan-app.service","enabled":true,"contents":` + jsonString(unit) + `}]}`
	files := map[string]string{dir + "/app.conf": "1\n"}
	step := func(path string) map[string]string {
		files[path] = "x\n"
		if path == "/etc/containers/registries.conf" {
			files[path] = "unqualified-search-registries = [\"docker.io\"]\n" // a safe addition: no drain
		}
		out := map[string]string{}
		for k, v := range files {
			out[k] = v
		}
		return out
	}
	steps := []planStep{
		{"reboot", ign(step(dir+"/app.conf"), units), "Reboot", "Rebooted into rendered-pl1-reboot"},
		{"none", ign(step(dir+"/none/a"), units), "None", "Changes need no reboot or reload"},
		{"restart", ign(step(dir+"/restart/a"), units), "RestartUnit", "Restarted plan-app.service"},
		{"daemonreload", ign(step(dir+"/dr/a"), units), "DaemonReload", "Reloaded systemd"},
		{"crio", ign(step("/etc/containers/registries.conf"), units), "ReloadCRIO", "Reloaded crio.service"},
	}
	current := planAccepted(t, n, log, policyFile, steps)
	planRefused(t, n, log, policyFile, current, files, units)
}

type planStep struct{ name, ignition, kind, postMsg string }

// planAccepted runs each step's update after its plan and checks they
// agree; it returns the config the node ends on.
func planAccepted(t *testing.T, n *testbed.Node, log *testbed.StatusLog, policyFile string, steps []planStep) string {
	t.Helper()
	current := "rendered-pl1-base"
	for _, s := range steps {
		name := "rendered-pl1-" + s.name
		config(t, name, s.ignition)
		r := planBoth(t, policyFile, current, name)
		if !r.Apply || r.PostAction.Kind != s.kind || r.DrainRequired != (s.kind == "Reboot") {
			t.Fatalf("%s: plan says apply=%v, post action %+v, drain %v; want %s", name, r.Apply, r.PostAction, r.DrainRequired, s.kind)
		}
		boots := n.Sys.Boots()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		if err := n.SetDesired(ctx, name); err != nil {
			t.Fatal(err)
		}
		if err := waitCurrent(ctx, log, name); err != nil {
			t.Fatal(err)
		}
		cancel()
		if got := log.Condition("UpdateCompatible").Message; got != r.Summary {
			t.Errorf("%s: UpdateCompatible says\n  %q\nthe plan said\n  %q", name, got, r.Summary)
		}
		if got := log.Condition("UpdatePostActionComplete").Message; got != s.postMsg {
			t.Errorf("%s: post action %q, want %q", name, got, s.postMsg)
		}
		if drained := log.Condition("Drained").Reason != "NotRequired"; drained != r.DrainRequired {
			t.Errorf("%s: drained %v, plan said drain %v", name, drained, r.DrainRequired)
		}
		if rebooted := n.Sys.Boots() > boots; rebooted != (s.kind == "Reboot") {
			t.Errorf("%s: rebooted %v, plan said %s", name, rebooted, s.kind)
		}
		current = name
	}
	return current
}

// planRefused checks refused plans against the refused updates, and rolls
// the node back to current after each.
func planRefused(t *testing.T, n *testbed.Node, log *testbed.StatusLog, policyFile, current string, files map[string]string, units string) {
	t.Helper()
	const dir = "/etc/nodeconfd-plan"
	refusals := []struct {
		name, ignition, state string
		fields                []string
	}{
		{"disks", strings.Replace(ign(files, units), `"storage":{`, `"storage":{"disks":[{"device":"/dev/vdb","wipeTable":true}],`, 1),
			"Unreconcilable", []string{"spec.config.storage.disks"}},
		{"fields", ign(map[string]string{"/proc/pl1": "x", "/sys/pl1": "x", dir + "/fine": "x"}, units), "Degraded",
			[]string{"spec.config.storage.files[1].path", "spec.config.storage.files[2].path"}},
	}
	for _, c := range refusals {
		name := "rendered-pl1-" + c.name
		config(t, name, c.ignition)
		r := planBoth(t, policyFile, current, name)
		if r.Apply || r.Refusal.State != c.state {
			t.Fatalf("%s: plan %+v, want a refusal with state %s", name, r.Refusal, c.state)
		}
		var fields []string
		for _, p := range r.Refusal.Problems {
			fields = append(fields, p.Field)
		}
		if !reflect.DeepEqual(fields, c.fields) {
			t.Errorf("%s: the plan names fields %q, want %q", name, fields, c.fields)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		from := log.Len()
		if err := n.SetDesired(ctx, name); err != nil {
			t.Fatal(err)
		}
		if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
			t.Fatal(err)
		}
		// The refusal's status, whichever try wrote it: a retry, right after the first
		// failure's Node write, stages UpdateCompatible Unknown again before refusing again.
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		if _, err := log.WaitStatus(wctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
			c := testbed.Find(st, "UpdateCompatible")
			return c != nil && c.Status == metav1.ConditionFalse
		}); err != nil {
			t.Fatalf("%s: no UpdateCompatible=False: %v", name, err)
		}
		wcancel()
		if got := falseMessage(log, "UpdateCompatible"); got != r.Refusal.Message {
			t.Errorf("%s: UpdateCompatible says\n  %q\nthe plan said\n  %q", name, got, r.Refusal.Message)
		}
		if !strings.Contains(r.Refusal.Message, c.fields[0]) {
			t.Errorf("%s: the message does not name %s", name, c.fields[0])
		}
		if st := getNode(t, "pl1").Annotations["machineconfiguration.openshift.io/state"]; st != r.Refusal.State {
			t.Errorf("%s: state %q, the plan said %q", name, st, r.Refusal.State)
		}
		if err := n.SetDesired(ctx, current); err != nil {
			t.Fatal(err)
		}
		if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	planRefusedOnNode(t, n, log, policyFile, current, units)
}

// planRefusedOnNode: an owner the node does not have is refused only by
// the node's side of prepare; plan sees it with --root-mount, word for word.
func planRefusedOnNode(t *testing.T, n *testbed.Node, log *testbed.StatusLog, policyFile, current, units string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := "rendered-pl1-ghost"
	config(t, name, strings.Replace(ign(map[string]string{"/etc/nodeconfd-plan/ghost": "x"}, units),
		`"mode":420,`, `"mode":420,"user":{"name":"ghost"},`, 1))
	common := []string{"-o", "json", "--post-action-policy", policyFile, "--allowed-config-pattern", testbed.TestConfigPattern,
		"--node", "pl1", "--desired", name, "--kubeconfig", bed.CP.Kubeconfig()}
	if off := runPlanCmd(ctx, t, common); !off.Apply || off.NotPreviewed == "" {
		t.Errorf("off the node: apply=%v, notPreviewed %q; want applied, saying what was not checked", off.Apply, off.NotPreviewed)
	}
	r := runPlanCmd(ctx, t, append(common, "--root-mount", n.Sys.Root))
	if r.Apply || r.Refusal.Problems[0].Field != "spec.config.storage.files[0].user.name" || r.NotPreviewed != "" {
		t.Fatalf("on the node: %+v, want refused naming the owner", r.Refusal)
	}
	if err := n.SetDesired(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	if got := log.Condition("UpdateCompatible").Message; got != r.Refusal.Message {
		t.Errorf("%s: UpdateCompatible says\n  %q\nthe plan on the node said\n  %q", name, got, r.Refusal.Message)
	}
	if st := getNode(t, "pl1").Annotations["machineconfiguration.openshift.io/state"]; st != r.Refusal.State {
		t.Errorf("%s: state %q, the plan said %q", name, st, r.Refusal.State)
	}
}

// planBoth runs `nodeconfd plan` from the files kubectl prints and from the
// cluster, checks that both say the same, and returns the report.
func planBoth(t *testing.T, policyFile, current, desired string) preview.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{current, desired} {
		out, err := bed.Kubectl(ctx, "get", "mc", name, "-o", "yaml")
		if err != nil {
			t.Fatalf("kubectl get mc %s: %v\n%s", name, err, out)
		}
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, out, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	common := []string{"-o", "json", "--post-action-policy", policyFile, "--allowed-config-pattern", testbed.TestConfigPattern}
	fromFiles := runPlanCmd(ctx, t, append([]string{"--current", paths[0], "--desired", paths[1]}, common...))
	fromCluster := runPlanCmd(ctx, t, append([]string{"--node", "pl1", "--desired", desired, "--kubeconfig", bed.CP.Kubeconfig()}, common...))
	if (fromCluster.Drain != nil) != (fromCluster.Apply && fromCluster.DrainRequired) {
		t.Errorf("plan --node: drain forecast %+v with drainRequired=%v", fromCluster.Drain, fromCluster.DrainRequired)
	}
	fromCluster.Drain = nil // only the cluster's view can forecast the drain
	// The ETA's finish is the time of each run plus the same prediction
	// (a refusal has none).
	switch f, c := fromFiles.ETA, fromCluster.ETA; {
	case (f == nil) != (c == nil) || (f != nil && f.Seconds != c.Seconds):
		t.Errorf("plan's ETA from files %+v, from the cluster %+v: want the same prediction", f, c)
	case f != nil:
		c.EstimatedFinish = f.EstimatedFinish
	}
	if !reflect.DeepEqual(fromFiles, fromCluster) {
		t.Errorf("plan from files:\n%+v\nfrom the cluster:\n%+v", fromFiles, fromCluster)
	}
	text, _ := exec.CommandContext(ctx, bed.Daemon, "plan", "--current", paths[0], "--desired", paths[1],
		"--post-action-policy", policyFile, "--allowed-config-pattern", testbed.TestConfigPattern).CombinedOutput()
	t.Logf("nodeconfd plan %s -> %s:\n%s", current, desired, text)
	return fromFiles
}

func runPlanCmd(ctx context.Context, t *testing.T, args []string) preview.Report {
	t.Helper()
	out, err := exec.CommandContext(ctx, bed.Daemon, append([]string{"plan"}, args...)...).Output()
	var r preview.Report
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		t.Fatalf("plan %v: %v, %v\n%s", args, err, jerr, out)
	}
	if code := exitCode(err); code != map[bool]int{true: 0, false: 1}[r.Apply] {
		t.Errorf("plan %v: exit %d with apply=%v", args, code, r.Apply)
	}
	return r
}

// falseMessage is the message of the condition's latest False status.
func falseMessage(log *testbed.StatusLog, t string) string {
	h := log.History(t)
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Status == metav1.ConditionFalse {
			return h[i].Message
		}
	}
	return ""
}
