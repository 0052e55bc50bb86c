// Command gencrds writes the MachineConfig, MachineConfigNode, MachineConfigPool and
// MachineConfiguration CustomResourceDefinitions under
// manifests/ from the CRD YAMLs shipped in the github.com/openshift/api module, so the daemon's
// CRDs match the Go types it is built with.
//
// Three changes are made: annotations and labels that tie a CRD to an OpenShift release payload are
// dropped, the MachineConfigNode's printer columns are replaced by the ones the status contract
// (and the OpenShift documentation it follows) promises for `kubectl get machineconfignodes`, and
// the status fields the daemon writes that only a feature-gated variant of the CRD has
// (status.irreconcilableChanges) are copied into the Default one (see graft), and nodeconfd's own
// status field (status.updateETA) is added (see own.go).
//
// Usage, from the repository root:
//
//	go run ./hack/gencrds          # rewrite manifests/00-crd-*.yaml
//	go run ./hack/gencrds -check   # exit 1 if the committed files are stale
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

const apiModule = "github.com/openshift/api"

// crdSourceDir is where the openshift/api module keeps its generated machineconfiguration CRDs;
// operatorSourceDir its operator.openshift.io ones (MachineConfiguration).
const (
	crdSourceDir      = "machineconfiguration/v1/zz_generated.crd-manifests"
	operatorSourceDir = "operator/v1/zz_generated.crd-manifests"
)

// crd names one CRD to copy: its file in the module and its file under manifests/.
type crd struct {
	source, target string
	// dir is the source's folder in the module; "" for crdSourceDir.
	dir string
	// columns, if set, replace the additionalPrinterColumns of every version.
	columns []column
	// graft, if set, adds status fields from another feature-set variant.
	graft *graft
	// own adds nodeconfd's own status fields (own.go).
	own bool
}

func main() {
	dir := flag.String("dir", "manifests", "folder the CRD files are written to")
	check := flag.Bool("check", false, "do not write; exit 1 if a file in -dir differs from what would be written")
	flag.Parse()
	if err := run(*dir, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gencrds:", err)
		os.Exit(1)
	}
}

func run(dir string, check bool) error {
	modDir, modVersion, err := module(apiModule)
	if err != nil {
		return err
	}
	crds := []crd{
		{source: "0000_80_machine-config_01_machineconfigs.crd.yaml", target: "00-crd-machineconfigs.yaml"},
		{source: "0000_80_machine-config_01_machineconfignodes-Default.crd.yaml", target: "00-crd-machineconfignodes.yaml",
			columns: machineConfigNodeColumns,
			graft: &graft{source: "0000_80_machine-config_01_machineconfignodes-SelfManagedHA-TechPreviewNoUpgrade.crd.yaml",
				statusFields: []string{"irreconcilableChanges"}}, own: true},
		// The daemons read spec.nodeDisruptionPolicy of the one named cluster.
		{source: "0000_80_machine-config_01_machineconfigurations-Default.crd.yaml", dir: operatorSourceDir,
			target: "00-crd-machineconfigurations.yaml"},
		// The controller renders and rolls out per pool (docs/controller.md).
		{source: "0000_80_machine-config_01_machineconfigpools-Default.crd.yaml", target: "00-crd-machineconfigpools.yaml"},
	}
	var stale []string
	for _, c := range crds {
		srcDir := c.dir
		if srcDir == "" {
			srcDir = crdSourceDir
		}
		src := filepath.Join(modDir, srcDir, c.source)
		origin := fmt.Sprintf("%s@%s/%s/%s", apiModule, modVersion, srcDir, c.source)
		if c.graft != nil {
			origin += fmt.Sprintf("\n# status.%s from: %s", strings.Join(c.graft.statusFields, ", status."), c.graft.source)
		}
		want, err := generate(src, filepath.Join(modDir, srcDir), origin, c)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, c.target)
		if check {
			got, err := os.ReadFile(dst)
			if err != nil || !bytes.Equal(got, want) {
				stale = append(stale, dst)
			}
			continue
		}
		if err := os.WriteFile(dst, want, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", dst, err)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("%s out of date; run: go run ./hack/gencrds", strings.Join(stale, ", "))
	}
	return nil
}

// module returns the folder and version of a module in the build list of the current module.
func module(path string) (dir, version string, err error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", path).Output()
	if err != nil {
		return "", "", fmt.Errorf("locating module %s: %w", path, err)
	}
	dir, version, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok || dir == "" {
		return "", "", fmt.Errorf("locating module %s: module not downloaded (run go mod download %s)", path, path)
	}
	return dir, version, nil
}

// generate reads one CRD YAML file and returns the edited copy, with a header naming its source.
func generate(src, srcDir, origin string, c crd) ([]byte, error) {
	raw, err := os.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", src, err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", src, err)
	}
	if err := edit(obj, c.columns); err != nil {
		return nil, fmt.Errorf("editing %s: %w", src, err)
	}
	if c.graft != nil {
		if err := c.graft.apply(obj, filepath.Join(srcDir, c.graft.source)); err != nil {
			return nil, fmt.Errorf("editing %s: %w", src, err)
		}
	}
	if c.own {
		if err := addOwn(obj); err != nil {
			return nil, fmt.Errorf("editing %s: %w", src, err)
		}
		origin += "\n# status.updateETA: nodeconfd's own (hack/gencrds/own.go)"
	}
	body, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", src, err)
	}
	header := "# Code generated by go run ./hack/gencrds. DO NOT EDIT.\n# Source: " + origin + "\n"
	return append([]byte(header), body...), nil
}

// edit strips release-payload metadata and, if columns is set, replaces the printer columns.
func edit(obj map[string]any, columns []column) error {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("no metadata")
	}
	if ann, ok := meta["annotations"].(map[string]any); ok {
		for k := range ann {
			if payloadKey(k) {
				delete(ann, k)
			}
		}
		if len(ann) == 0 {
			delete(meta, "annotations")
		}
	}
	// openshift.io/operator-managed asks the cluster-version operator to manage the object.
	delete(meta, "labels")

	if columns == nil {
		return nil
	}
	spec, _ := obj["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return fmt.Errorf("no spec.versions")
	}
	for _, v := range versions {
		version, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("malformed spec.versions entry")
		}
		version["additionalPrinterColumns"] = printerColumns(columns)
	}
	return nil
}

// payloadKey reports whether an annotation only matters to OpenShift's release payload tooling.
func payloadKey(k string) bool {
	return strings.HasPrefix(k, "include.release.openshift.io/") ||
		strings.HasPrefix(k, "release.openshift.io/") ||
		k == "api.openshift.io/merged-by-featuregates"
}
