package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const planA = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: rendered-worker-a
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      files:
      - path: /etc/containers/registries.conf
        contents: {source: "data:,unqualified-search-registries%20%3D%20%5B%22a.io%22%5D"}
`

func TestRunPlanExitStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.yaml", planA)
	b := write("b.json", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig",`+
		`"metadata":{"name":"rendered-worker-b"},"spec":{"config":{"ignition":{"version":"3.4.0"},`+
		`"storage":{"files":[{"path":"/etc/containers/registries.conf","contents":{"source":"data:,unqualified-search-registries%20%3D%20%5B%22a.io%22%2C%22b.io%22%5D"}}]}}}}`)
	bad := write("bad.yaml", strings.ReplaceAll(planA, "/etc/containers/registries.conf", "/proc/x"))
	list := write("list.yaml", "apiVersion: v1\nkind: List\nmetadata: {name: x}\n")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--current", a, "--desired", b}, 0, "Post action: ReloadCRIO (Special); no drain"},
		{[]string{"--desired", a, "-o", "json"}, 0, `"kind": "ReloadCRIO"`},
		{[]string{"--current", a, "--desired", b}, 0, "ETA: about 9s if it started now"}, // the defaults: prepare, write, reload, validate, finish
		{[]string{"--desired", a, "-o", "json"}, 0, `"postAction": "Reload",
    "seconds": 9,`},
		{[]string{"--current", a, "--desired", bad}, 1, `MachineConfig "rendered-worker-a": spec.config.storage.files[0].path`},
		{[]string{"--current", a, "--desired", b, "--pool", "master"}, 1, "metadata.name"},
		{[]string{"--current", a}, 2, "give --current and --desired"},
		{[]string{"--desired", filepath.Join(dir, "missing.yaml")}, 2, "reading the MachineConfig file"},
		{[]string{"--desired", list}, 2, "holds a List"},
		{[]string{"--desired", a, "-o", "yaml"}, 2, "want text or json"},
		{[]string{"--node", "n", "--current", a}, 2, "--current is read from the cluster"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := runPlan(tt.args, &out, &errOut)
		if code != tt.code || !strings.Contains(out.String()+errOut.String(), tt.want) {
			t.Errorf("plan %v: exit %d, want %d with %q:\n%s%s", tt.args, code, tt.code, tt.want, out.String(), errOut.String())
		}
		if tt.code != 2 && tt.args[len(tt.args)-1] == "json" {
			var v map[string]any
			if err := json.Unmarshal(out.Bytes(), &v); err != nil {
				t.Errorf("plan %v: output is not JSON: %v", tt.args, err)
			}
		}
	}
}
