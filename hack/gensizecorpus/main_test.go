package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// TestCorpusRefused parses every size case of the corpus as the daemon
// does: each is refused naming the field its annotation gives, and each
// object stays small.
func TestCorpusRefused(t *testing.T) {
	files, err := filepath.Glob("../../test/e2e/testdata/hostile/size-*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("size cases: %v %v", files, err)
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > 400<<10 {
				t.Errorf("%d bytes, want under 400 KiB", len(data))
			}
			var mc mcfgv1.MachineConfig
			if err := yaml.UnmarshalStrict(data, &mc); err != nil {
				t.Fatal(err)
			}
			_, err = plan.Parse(&mc)
			var ce *plan.ConfigError
			if !errors.As(err, &ce) || ce.Field != mc.Annotations["nodeconfd.test/field"] {
				t.Errorf("Parse = %v, want a refusal naming %s", err, mc.Annotations["nodeconfd.test/field"])
			}
		})
	}
}
