package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/preview"
)

// The harness of the MCD conformance tests (mcdconformance_test.go,
// mcddrain_test.go): each case is two MachineConfigs written to files and
// an optional node disruption policy file, run through `nodeconfd plan -o
// json`, and upstream's expectation mapped to the report.

// mcdConfig is one side of a case: the parts of a MachineConfig that
// upstream's tests set. Its zero value is an empty Ignition 3.5 config.
type mcdConfig struct {
	files   map[string]string // path: contents
	units   []map[string]any  // Ignition systemd.units entries
	users   []map[string]any  // Ignition passwd.users entries
	groups  []string          // passwd.groups names
	storage map[string]any    // further storage sections (disks, raid, links...)
	ignArgs map[string]any    // Ignition's own kernelArguments section
	version string            // Ignition spec version; "" for 3.5.0
	osImage string
	kargs   []string
	fips    bool
}

// core is a passwd.users list holding core with these SSH keys.
func core(keys ...string) []map[string]any {
	return []map[string]any{{"name": "core", "sshAuthorizedKeys": keys}}
}

// withFile returns a copy of c with the file at path holding contents
// ("" removes it).
func (c mcdConfig) withFile(path, contents string) mcdConfig {
	files := map[string]string{}
	for p, v := range c.files {
		files[p] = v
	}
	if contents == "" {
		delete(files, path)
	} else {
		files[path] = contents
	}
	c.files = files
	return c
}

// machineConfig renders c as the MachineConfig named name, in JSON.
func (c mcdConfig) machineConfig(name string) ([]byte, error) {
	version := c.version
	if version == "" {
		version = "3.5.0"
	}
	storage := map[string]any{}
	for k, v := range c.storage {
		storage[k] = v
	}
	paths := make([]string, 0, len(c.files))
	for p := range c.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var files []map[string]any
	for _, p := range paths {
		files = append(files, map[string]any{"path": p, "mode": 420,
			"contents": map[string]any{"source": "data:;base64," + base64.StdEncoding.EncodeToString([]byte(c.files[p]))}})
	}
	if files != nil {
		storage["files"] = files
	}
	config := map[string]any{"ignition": map[string]any{"version": version}, "storage": storage}
	if c.units != nil {
		config["systemd"] = map[string]any{"units": c.units}
	}
	passwd := map[string]any{}
	if c.users != nil {
		passwd["users"] = c.users
	}
	var groups []map[string]any
	for _, g := range c.groups {
		groups = append(groups, map[string]any{"name": g})
	}
	if groups != nil {
		passwd["groups"] = groups
	}
	config["passwd"] = passwd
	if c.ignArgs != nil {
		config["kernelArguments"] = c.ignArgs
	}
	spec := map[string]any{"config": config, "fips": c.fips}
	if c.osImage != "" {
		spec["osImageURL"] = c.osImage
	}
	if c.kargs != nil {
		spec["kernelArguments"] = c.kargs
	}
	return json.Marshal(map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": name}, "spec": spec})
}

// mcdWant is upstream's expectation, mapped to the plan report.
type mcdWant struct {
	// kind is postAction.kind; actions the ordered postAction.actions.
	kind    string
	actions []string
	drain   bool
	// refused, when set, is a field the refusal must name (the update is
	// irreconcilable or invalid); kind, actions and drain are then unused.
	refused string
}

// mcdCase is one ported case.
type mcdCase struct {
	// name is the upstream test and case it ports.
	name     string
	old, new mcdConfig
	// policy is a file's nodeDisruptionPolicy block ("" for the defaults).
	policy string
	want   mcdWant
}

// planMCD writes the case's files, runs `nodeconfd plan` on them and
// returns its report.
func planMCD(t *testing.T, c mcdCase) (preview.Report, int) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	args := []string{"-o", "json"}
	for _, side := range []struct {
		flag, name string
		cfg        mcdConfig
	}{{"--current", "rendered-worker-old", c.old}, {"--desired", "rendered-worker-new", c.new}} {
		data, err := side.cfg.machineConfig(side.name)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, side.flag, write(side.name+".json", data))
	}
	if c.policy != "" {
		args = append(args, "--node-disruption-policy", write("policy.yaml", []byte(c.policy)))
	}
	var out, errOut bytes.Buffer
	code := runPlan(args, &out, &errOut)
	var r preview.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("plan exit %d, report not JSON: %v\n%s%s", code, err, out.String(), errOut.String())
	}
	return r, code
}

// checkMCD checks the report against the case's expectation.
func checkMCD(t *testing.T, c mcdCase, r preview.Report, code int) {
	t.Helper()
	if c.want.refused != "" {
		var fields []string
		if r.Refusal != nil {
			for _, p := range r.Refusal.Problems {
				fields = append(fields, p.Field)
			}
		}
		if code != planRefused || !slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(f, c.want.refused) }) {
			t.Errorf("exit %d, refused fields %q; want refused naming %s", code, fields, c.want.refused)
		}
		return
	}
	if code != planApplies || r.PostAction == nil {
		t.Fatalf("exit %d, refusal %+v; want applied", code, r.Refusal)
	}
	a := r.PostAction
	if a.Kind != c.want.kind || !slices.Equal(a.Actions, c.want.actions) || r.DrainRequired != c.want.drain {
		t.Errorf("post action %s %q drain %v (%s); want %s %q drain %v\nreasons: %q",
			a.Kind, a.Actions, r.DrainRequired, a.DrainReason, c.want.kind, c.want.actions, c.want.drain, a.Reasons)
	}
}

// Short forms of the expectations.
var (
	wantNone   = mcdWant{kind: "None"}
	wantReboot = mcdWant{kind: "Reboot", drain: true}
)

func refusedAt(field string) mcdWant { return mcdWant{refused: field} }

func crio(drain bool, actions ...string) mcdWant {
	return mcdWant{kind: "ReloadCRIO", actions: actions, drain: drain}
}
