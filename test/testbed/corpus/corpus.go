// Package corpus reads the hostile MachineConfig corpus
// (test/e2e/testdata/hostile) and prepares a node for each case: the setup
// verbs of a case change the node's root before the case is applied, and
// are undone after it.
package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/yaml"
)

// Annotations the runner reads from each case.
const (
	FieldAnnotation = "nodeconfd.test/field"
	StateAnnotation = "nodeconfd.test/state"
	SetupAnnotation = "nodeconfd.test/setup"
	OSAnnotation    = "nodeconfd.test/os"
)

// CanaryDir holds each case's canary file, the first file of its config:
// a refused config must never write it.
const CanaryDir = "/etc/nodeconfd-canary"

// Case is one hostile MachineConfig with what the runner expects of it.
type Case struct {
	// File is the case's file name (path-proc.yaml).
	File   string
	Config *mcfgv1.MachineConfig
	// Field is the field the refusal must name; State the node state
	// annotation (Unreconcilable or Degraded) it must set.
	Field, State string
	// Setup lists the setup verbs, one per line; OS is "", "rpm-ostree"
	// or "bootc".
	Setup []string
	OS    string
}

// Canary is the path of the case's canary file.
func (c Case) Canary() string { return CanaryDir + "/" + c.Config.Name }

// Load reads every case in dir (*.yaml), sorted by file name, and checks
// each against the corpus format.
func Load(dir string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var cases []Case
	for _, f := range files {
		c, err := loadCase(f)
		if err != nil {
			return nil, fmt.Errorf("corpus case %s: %w", filepath.Base(f), err)
		}
		cases = append(cases, c)
	}
	return cases, nil
}

func loadCase(file string) (Case, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Case{}, err
	}
	mc := &mcfgv1.MachineConfig{}
	if err := yaml.UnmarshalStrict(data, mc); err != nil {
		return Case{}, err
	}
	base := strings.TrimSuffix(filepath.Base(file), ".yaml")
	ann := mc.Annotations
	c := Case{File: filepath.Base(file), Config: mc, Field: ann[FieldAnnotation], State: ann[StateAnnotation], OS: ann[OSAnnotation]}
	for _, line := range strings.Split(ann[SetupAnnotation], "\n") {
		if line = strings.TrimSpace(line); line != "" {
			c.Setup = append(c.Setup, line)
		}
	}
	switch {
	case mc.APIVersion != "machineconfiguration.openshift.io/v1" || mc.Kind != "MachineConfig":
		return Case{}, fmt.Errorf("want apiVersion machineconfiguration.openshift.io/v1, kind MachineConfig; have %s, %s", mc.APIVersion, mc.Kind)
	case mc.Name != "hostile-"+base:
		return Case{}, fmt.Errorf("metadata.name %q, want %q", mc.Name, "hostile-"+base)
	case c.Field == "":
		return Case{}, fmt.Errorf("no %s annotation", FieldAnnotation)
	case c.State != "Unreconcilable" && c.State != "Degraded":
		return Case{}, fmt.Errorf("%s %q, want Unreconcilable or Degraded", StateAnnotation, c.State)
	case c.OS != "" && c.OS != "rpm-ostree" && c.OS != "bootc":
		return Case{}, fmt.Errorf("%s %q, want rpm-ostree or bootc", OSAnnotation, c.OS)
	}
	if err := checkCanary(c); err != nil {
		return Case{}, err
	}
	return c, nil
}

// checkCanary checks that the case's first file is its canary. The raw
// config is JSON by now.
func checkCanary(c Case) error {
	var ign struct {
		Storage struct {
			Files []struct {
				Path     string
				Contents struct{ Source string }
			}
		}
	}
	if err := json.Unmarshal(c.Config.Spec.Config.Raw, &ign); err != nil {
		return fmt.Errorf("reading spec.config: %w", err)
	}
	if len(ign.Storage.Files) == 0 || ign.Storage.Files[0].Path != c.Canary() || ign.Storage.Files[0].Contents.Source != "data:,canary" {
		return fmt.Errorf("the first file must be the canary %s with contents data:,canary", c.Canary())
	}
	return nil
}
