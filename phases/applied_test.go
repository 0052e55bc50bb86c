package phases_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
)

// A completed update keeps its config on the node; the next update diffs
// against that copy, so the config the node runs may be gone from the API
// server: the files only it had are still removed.
func TestUpdateDiffsAgainstAppliedCopy(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	two := `{"ignition":{"version":"3.4.0"},"storage":{"files":[` +
		`{"path":"/etc/containers/registries.d/a.yaml","contents":{"source":"data:,1"}},{"path":"/etc/containers/registries.d/b.yaml","contents":{"source":"data:,2"}}]}}`
	cfgs := configs{"a": empty, "b": two, "c": file("/etc/containers/registries.d/a.yaml", "3")}
	r := newRunner(cfgs, h, cl, units, w)
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if mc, why := phases.LoadApplied(h, "b"); mc == nil || string(mc.Spec.Config.Raw) != two {
		t.Fatalf("applied copy of b: %v (%s)", mc, why)
	}
	delete(cfgs, "b")
	r = newRunner(cfgs, h, cl, units, w)
	r.Record = progress.New("b", "c")
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.files["/etc/containers/registries.d/b.yaml"]; ok || h.files["/etc/containers/registries.d/a.yaml"] != "3" {
		t.Errorf("files after b → c: %v", h.files)
	}
	if mc, _ := phases.LoadApplied(h, "c"); mc == nil {
		t.Error("no applied copy of c")
	}
}

// The copy is used only for the config it names: another name, no copy or
// a broken copy falls back to the API server, and says why.
func TestCurrentConfigSource(t *testing.T) {
	ctx := context.Background()
	h := &host{state: map[string][]byte{}}
	api := configs{"x": empty}
	for _, tc := range []struct {
		name, state, ask, why, err string
		local                      bool
	}{
		{"no copy", "", "x", "no copy is kept on the node", "", false},
		{"copy of x", `{"metadata":{"name":"x"},"spec":{"config":{"ignition":{"version":"3.4.0"}}}}`, "x", "", "", true},
		{"copy of another", `{"metadata":{"name":"w"}}`, "x", `is of MachineConfig "w"`, "", false},
		{"broken copy", `{"metadata":`, "x", "cannot be decoded", "", false},
		{"gone from both", `{"metadata":{"name":"w"}}`, "y", `is of MachineConfig "w"`, `fetching MachineConfig "y"`, false},
	} {
		h.state = map[string][]byte{}
		if tc.state != "" {
			h.state[phases.AppliedFileName] = []byte(tc.state)
		}
		mc, why, err := phases.CurrentConfig(ctx, h, api, tc.ask)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("%s: error %v, want %q and %q", tc.name, err, tc.err, tc.why)
			}
			continue
		}
		if err != nil || mc.Name != tc.ask || !strings.Contains(why, tc.why) || (why == "") != tc.local {
			t.Errorf("%s: %v, %q, %v", tc.name, mc, why, err)
		}
	}
}
