package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// renderFragments are a pool's fragments as an administrator keeps them:
// two YAML documents in one file, a JSON List in another, and a master
// fragment the worker pool does not select.
const (
	renderYAML = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-chrony
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
      - path: /etc/chrony.conf
        mode: 420
        contents:
          source: data:,server%20ntp.example.com
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-master-chrony
  labels:
    machineconfiguration.openshift.io/role: master
spec:
  kernelArguments: [nosmt]
`
	renderJSON = `{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig",
  "metadata":{"name":"99-worker-ssh","labels":{"machineconfiguration.openshift.io/role":"worker"}},
  "spec":{"config":{"ignition":{"version":"3.5.0"},
    "passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA admin"]}]},
    "systemd":{"units":[{"name":"chronyd.service","enabled":true}]}},
   "kernelArguments":["quiet"]}}]}`
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRenderCommand renders the worker pool from files, twice to the same
// bytes, and `nodeconfd plan` accepts the result as a node's desired
// config.
func TestRenderCommand(t *testing.T) {
	dir := writeFiles(t, map[string]string{"fragments.yaml": renderYAML, "list.json": renderJSON})
	args := []string{"--pool", "worker", filepath.Join(dir, "fragments.yaml"), filepath.Join(dir, "list.json")}
	var out, errOut bytes.Buffer
	if code := runRender(args, &out, &errOut); code != renderDone {
		t.Fatalf("render: exit %d, stderr:\n%s", code, errOut.String())
	}
	var mc mcfgv1.MachineConfig
	if err := yaml.Unmarshal(out.Bytes(), &mc); err != nil {
		t.Fatalf("decoding the output: %v\n%s", err, out.String())
	}
	if !strings.HasPrefix(mc.Name, "rendered-worker-") || strings.Join(mc.Spec.KernelArguments, " ") != "quiet" {
		t.Errorf("rendered %s with kernel arguments %v:\n%s", mc.Name, mc.Spec.KernelArguments, out.String())
	}
	if want := mc.Name + ": pool worker, 2 MachineConfigs in merge order: 99-worker-chrony, 99-worker-ssh (1 other not selected)\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	var again bytes.Buffer
	if code := runRender(append([]string{"-o", "json"}, args...), &again, &errOut); code != renderDone {
		t.Fatalf("render -o json: exit %d", code)
	}
	var fromJSON mcfgv1.MachineConfig
	if err := yaml.Unmarshal(again.Bytes(), &fromJSON); err != nil || fromJSON.Name != mc.Name {
		t.Errorf("render -o json gave %s (%v), want the same name %s", fromJSON.Name, err, mc.Name)
	}

	rendered := filepath.Join(dir, "rendered.yaml")
	if err := os.WriteFile(rendered, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var planOut, planErr bytes.Buffer
	if code := runPlan([]string{"--desired", rendered, "--pool", "worker"}, &planOut, &planErr); code != planApplies {
		t.Fatalf("plan of the rendered config: exit %d\n%s%s", code, planOut.String(), planErr.String())
	}
	if !strings.Contains(planOut.String(), "/etc/chrony.conf") || !strings.Contains(planOut.String(), "would be applied") {
		t.Errorf("plan's report:\n%s", planOut.String())
	}
}

// TestRenderCommandErrors: a fragment that cannot render is refused (exit
// 1) naming it and its field; a file that is not MachineConfigs, or no
// file, is a usage error (exit 2).
func TestRenderCommandErrors(t *testing.T) {
	bad := strings.Replace(renderYAML, "mode: 420", "mode: 2541", 1) // 04755
	dir := writeFiles(t, map[string]string{"bad.yaml": bad, "pool.yaml": "kind: MachineConfigPool\nmetadata:\n  name: worker\n",
		"ok.json": renderJSON})
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"setuid mode", []string{filepath.Join(dir, "bad.yaml")}, renderRefused,
			`MachineConfig "99-worker-chrony": spec.config.storage.files[0].mode: mode 04755`},
		{"pool selects nothing", []string{"--pool", "infra", filepath.Join(dir, "ok.json")}, renderRefused, "no MachineConfigs match"},
		{"custom pool selector", []string{"--pool", "infra", "--selector", "machineconfiguration.openshift.io/role in (worker,infra)",
			filepath.Join(dir, "ok.json")}, renderDone, "rendered-infra-"},
		{"not a MachineConfig", []string{filepath.Join(dir, "pool.yaml")}, renderUsage, `holds a "MachineConfigPool"`},
		{"no file", nil, renderUsage, "give the MachineConfig files"},
		{"bad output", []string{"-o", "text", filepath.Join(dir, "ok.json")}, renderUsage, `-o "text"`},
		{"missing file", []string{filepath.Join(dir, "nope.yaml")}, renderUsage, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runRender(c.args, &out, &errOut)
			if code != c.code || !strings.Contains(errOut.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut.String(), c.code, c.want)
			}
			if code != renderDone && out.Len() > 0 {
				t.Errorf("printed a config on a refusal:\n%s", out.String())
			}
		})
	}
}
