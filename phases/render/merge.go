package render

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	ign "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// mergeOrder returns the fragments in upstream's merge order: the worker
// role's first, then the others, each group by name; a later fragment
// overrides an earlier one. A fragment with no labels is refused, as
// upstream refuses it.
func mergeOrder(configs []*mcfgv1.MachineConfig) ([]*mcfgv1.MachineConfig, error) {
	var worker, other []*mcfgv1.MachineConfig
	for _, c := range configs {
		switch {
		case c.Labels == nil:
			return nil, &plan.ConfigError{Object: c.Name, Field: "metadata.labels", Msg: "no labels: a pool selects its MachineConfigs by label"}
		case c.Labels[RoleLabel] == workerPool:
			worker = append(worker, c)
		default:
			other = append(other, c)
		}
	}
	byName := func(a, b *mcfgv1.MachineConfig) int { return strings.Compare(a.Name, b.Name) }
	slices.SortStableFunc(worker, byName)
	slices.SortStableFunc(other, byName)
	return append(worker, other...), nil
}

// merge merges the ordered fragments' specs as upstream's
// MergeMachineConfigs does.
func merge(configs []*mcfgv1.MachineConfig, o Options) (mcfgv1.MachineConfigSpec, error) {
	raw, err := mergeIgnition(configs)
	if err != nil {
		return mcfgv1.MachineConfigSpec{}, err
	}
	spec := mcfgv1.MachineConfigSpec{
		Config:                         runtime.RawExtension{Raw: raw},
		OSImageURL:                     o.BaseOSImageURL,
		BaseOSExtensionsContainerImage: o.BaseOSExtensionsImage,
		KernelType:                     plan.KernelDefault,
		KernelArguments:                []string{},
		Extensions:                     []string{},
	}
	for _, c := range configs {
		s := c.Spec
		spec.FIPS = spec.FIPS || s.FIPS
		if s.KernelType == plan.KernelRealtime || s.KernelType == plan.Kernel64kPages {
			spec.KernelType = s.KernelType
		}
		// Appended as they are: upstream keeps duplicates.
		spec.KernelArguments = append(spec.KernelArguments, s.KernelArguments...)
		spec.Extensions = append(spec.Extensions, s.Extensions...)
		// Only an administrator's fragment overrides the base images.
		if c.Annotations[GeneratedByAnnotation] != "" {
			continue
		}
		if s.OSImageURL != "" {
			spec.OSImageURL = s.OSImageURL
		}
		if s.BaseOSExtensionsContainerImage != "" {
			spec.BaseOSExtensionsContainerImage = s.BaseOSExtensionsContainerImage
		}
	}
	if spec.KernelType != plan.KernelDefault {
		if err := kernelDevel(configs, spec.KernelType); err != nil {
			return mcfgv1.MachineConfigSpec{}, err
		}
	}
	return spec, nil
}

// kernelDevel refuses the kernel-devel extension with a kernel type other
// than the default one, as upstream does.
func kernelDevel(configs []*mcfgv1.MachineConfig, kernelType string) error {
	for _, c := range configs {
		if i := slices.Index(c.Spec.Extensions, "kernel-devel"); i >= 0 {
			return &plan.ConfigError{Object: c.Name, Field: fmt.Sprintf("spec.extensions[%d]", i),
				Msg: fmt.Sprintf("the kernel-devel extension is not supported with kernelType %s (set by another MachineConfig of the pool)", kernelType)}
		}
	}
	return nil
}

// mergeIgnition merges the fragments' Ignition configs with Ignition's
// own merge, each over the ones before it, and returns the result's JSON.
func mergeIgnition(configs []*mcfgv1.MachineConfig) ([]byte, error) {
	out := types.Config{Ignition: types.Ignition{Version: types.MaxVersion.String()}}
	for i, c := range configs {
		raw := c.Spec.Config.Raw
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		cfg, _, err := ign.ParseCompatibleVersion(raw)
		if err != nil {
			return nil, &plan.ConfigError{Object: c.Name, Field: "spec.config", Msg: fmt.Sprintf("parsing the Ignition config: %v", err)}
		}
		if i == 0 {
			out = cfg
			continue
		}
		// Ignition merges a file's compression apart from its source: a
		// later plain file would keep an earlier one's gzip. An empty
		// compression overrides it, and is cleared after the merge
		// (upstream does the same, coreos/butane#332).
		setEmptyCompression(cfg.Storage.Files)
		out = ign.Merge(out, cfg)
		clearEmptyCompression(out.Storage.Files)
	}
	// The daemon always overwrites a file; Ignition, since spec 3, only
	// when told to. Upstream makes it explicit so both agree.
	for i := range out.Storage.Files {
		if out.Storage.Files[i].Overwrite == nil {
			out.Storage.Files[i].Overwrite = ptr(true)
		}
	}
	raw, err := compactJSON(out)
	if err != nil {
		return nil, fmt.Errorf("encoding the merged Ignition config: %w", err)
	}
	return raw, nil
}

func setEmptyCompression(files []types.File) {
	for i := range files {
		if files[i].Contents.Compression == nil {
			files[i].Contents.Compression = ptr("")
		}
	}
}

func clearEmptyCompression(files []types.File) {
	for i := range files {
		if c := files[i].Contents.Compression; c != nil && *c == "" {
			files[i].Contents.Compression = nil
		}
	}
}

func ptr[T any](v T) *T { return &v }
