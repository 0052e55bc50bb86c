package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// graft copies status fields the daemon writes from another feature-set variant of a CRD.
// openshift/api generates one MachineConfigNode CRD per feature set, and fields behind a
// feature gate (status.irreconcilableChanges: IrreconcilableMachineConfig) exist only in the
// TechPreview variants. The API server drops a field its schema lacks, so the Default CRD
// gets exactly the fields the daemon fills, copied unchanged, and nothing else of TechPreview.
type graft struct {
	// source is the variant's file in crdSourceDir.
	source string
	// statusFields are the properties of .status copied from it.
	statusFields []string
}

// apply copies g's status fields from the variant at src into every version of obj.
func (g graft) apply(obj map[string]any, src string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	var from map[string]any
	if err := yaml.Unmarshal(raw, &from); err != nil {
		return fmt.Errorf("parsing %s: %w", src, err)
	}
	fromVersions := versionsByName(from)
	for name, v := range versionsByName(obj) {
		fv, ok := fromVersions[name]
		if !ok {
			return fmt.Errorf("%s has no version %s", src, name)
		}
		to, err := statusProperties(v)
		if err != nil {
			return err
		}
		props, err := statusProperties(fv)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		for _, f := range g.statusFields {
			p, ok := props[f]
			if !ok {
				return fmt.Errorf("%s has no status.%s in version %s", src, f, name)
			}
			to[f] = p
		}
	}
	return nil
}

func versionsByName(obj map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	spec, _ := obj["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok {
			name, _ := m["name"].(string)
			out[name] = m
		}
	}
	return out
}

// statusProperties returns schema.openAPIV3Schema.properties.status.properties of a version.
func statusProperties(version map[string]any) (map[string]any, error) {
	cur := any(version)
	for _, k := range []string{"schema", "openAPIV3Schema", "properties", "status", "properties"} {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("version %v: no %s in the status schema", version["name"], k)
		}
		cur = m[k]
	}
	props, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("version %v: no status properties", version["name"])
	}
	return props, nil
}
