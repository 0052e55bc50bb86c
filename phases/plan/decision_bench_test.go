package plan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BenchmarkPrepareDecision is prepare's decision on two rendered configs of
// 200 files (parse both, diff, check registries.conf as Decide does, choose
// the post action), where the change adds one digest-only mirror to a
// 500-entry registries.conf, under a 100-rule node disruption policy. The
// anchor is the same configs with that file under registries.d (a plain
// CRI-O reload, nothing parsed: what every registries.conf change cost
// before registries.conf was decided as upstream decides it) and the
// defaults alone; the middle case adds only the 100-rule policy.
func BenchmarkPrepareDecision(b *testing.B) {
	var rules []FileRule
	for i := range 100 {
		rules = append(rules, FileRule{Path: fmt.Sprintf("/etc/app%d", i), Actions: []Action{{Type: ActRestart, Unit: fmt.Sprintf("app%d.service", i)}}})
	}
	for _, c := range []struct {
		name   string
		path   string
		policy Policy
	}{
		{"anchor-registries.d-defaults", "/etc/containers/registries.d/bench.conf", DefaultPolicy()},
		{"registries.d-policy-100", "/etc/containers/registries.d/bench.conf", DefaultPolicy().With(Policy{Files: rules})},
		{"registries.conf-500-policy-100", RegistriesConfPath, DefaultPolicy().With(Policy{Files: rules})},
	} {
		b.Run(c.name, func(b *testing.B) {
			current := benchConfig(b, "rendered-worker-a", c.path, registriesConfOf(500, false))
			desired := benchConfig(b, "rendered-worker-b", c.path, registriesConfOf(500, true))
			b.ReportAllocs()
			for b.Loop() {
				cur, err := Parse(current)
				if err != nil {
					b.Fatal(err)
				}
				des, err := Parse(desired)
				if err != nil {
					b.Fatal(err)
				}
				d, err := Compare(cur, des)
				if err != nil {
					b.Fatal(err)
				}
				if err := ValidateRegistriesConf(des); err != nil && c.path == RegistriesConfPath {
					b.Fatal(err)
				}
				if a := c.policy.PostAction(cur, des, d); a.Kind != ActionReloadCRIO || a.Drain {
					b.Fatalf("post action %+v", a)
				}
			}
		})
	}
}

// benchConfig is a rendered config of 199 small files and the registries
// file at path.
func benchConfig(b *testing.B, name, path string, registries []byte) *mcfgv1.MachineConfig {
	b.Helper()
	var files []string
	for i := range 199 {
		files = append(files, fmt.Sprintf(`{"path":"/etc/bench/f%d.conf","mode":420,"contents":{"source":"data:;base64,%s"}}`,
			i, base64.StdEncoding.EncodeToString([]byte(strings.Repeat(fmt.Sprintf("line %d\n", i), 100)))))
	}
	src, _ := json.Marshal("data:;base64," + base64.StdEncoding.EncodeToString(registries))
	files = append(files, fmt.Sprintf(`{"path":%q,"mode":420,"contents":{"source":%s}}`, path, src))
	raw := `{"ignition":{"version":"3.4.0"},"storage":{"files":[` + strings.Join(files, ",") + `]}}`
	mc := &mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(raw)}}}
	mc.Name = name
	return mc
}
