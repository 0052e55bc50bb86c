package render

import (
	"bytes"
	"fmt"

	ign "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Verify checks that desired, a rendered config handed to a node of pool,
// is what the pool's fragments render to: fragments are the MachineConfigs
// the pool's machineConfigSelector (selector) selects now, written by the
// administrator, and o the options the controller renders with. A
// rendered config is written by the controller; verifying it on the node
// means a stolen controller token alone cannot put content on a node (its
// admission policy keeps it from writing fragments or pool selectors).
//
// The comparison is of what a node applies: the Ignition configs as parsed
// (so that key order, a server's re-encoding, or a null for an empty list
// change nothing) and every other spec field. A difference yields a
// *plan.ConfigError naming desired and the first field that differs.
func Verify(pool string, selector *metav1.LabelSelector, fragments []*mcfgv1.MachineConfig, desired *mcfgv1.MachineConfig, o Options) error {
	refuse := func(field, msg string) error {
		return &plan.ConfigError{Object: desired.Name, Field: field,
			Msg: fmt.Sprintf("not the merge of pool %s's MachineConfigs: %s; a config the controller did not render "+
				"from them is never applied (a newer render may be on its way)", pool, msg)}
	}
	selected, err := Select(pool, selector, fragments)
	if err != nil {
		return refuse("", err.Error())
	}
	// Merged only: the fragments' own checks (Render's) are the
	// controller's, and the daemon parses what it applies anyway.
	ordered, err := mergeOrder(selected)
	if err != nil {
		return refuse("", fmt.Sprintf("they do not merge (%v)", err))
	}
	want, err := merge(ordered, o)
	if err != nil {
		return refuse("", fmt.Sprintf("they do not merge (%v)", err))
	}
	field, err := differs(want, desired.Spec)
	if err != nil {
		return refuse("spec.config", err.Error())
	}
	if field != "" {
		return refuse(field, fmt.Sprintf("%s differs from the merge of %s", field, names(selected)))
	}
	return nil
}

// differs names the first field of got that a node would apply otherwise
// than want, "" when none.
func differs(want, got mcfgv1.MachineConfigSpec) (string, error) {
	w, err := parseIgnition(want.Config.Raw)
	if err != nil {
		return "", fmt.Errorf("parsing the merged Ignition config: %w", err)
	}
	g, err := parseIgnition(got.Config.Raw)
	if err != nil {
		return "", fmt.Errorf("parsing its Ignition config: %w", err)
	}
	if f := ignitionDiffers(w, g); f != "" {
		return f, nil
	}
	fields := []struct {
		name string
		w, g any
	}{
		{"spec.osImageURL", want.OSImageURL, got.OSImageURL},
		{"spec.baseOSExtensionsContainerImage", want.BaseOSExtensionsContainerImage, got.BaseOSExtensionsContainerImage},
		{"spec.kernelArguments", want.KernelArguments, got.KernelArguments},
		{"spec.extensions", want.Extensions, got.Extensions},
		{"spec.fips", want.FIPS, got.FIPS},
		{"spec.kernelType", plan.CanonicalKernelType(want.KernelType), plan.CanonicalKernelType(got.KernelType)},
	}
	for _, f := range fields {
		// Semantic: a nil list equals an empty one (the API server drops
		// or keeps an empty list; a node applies both alike).
		if !equality.Semantic.DeepEqual(f.w, f.g) {
			return f.name, nil
		}
	}
	return "", nil
}

// ignitionDiffers names the first Ignition section where g differs from
// w, "" when none. The version is not compared: the parse translates every
// accepted version to the one the node applies.
func ignitionDiffers(w, g types.Config) string {
	w.Ignition.Version, g.Ignition.Version = "", ""
	sections := []struct {
		name string
		w, g any
	}{
		{"spec.config.storage.files", w.Storage.Files, g.Storage.Files},
		{"spec.config.storage.links", w.Storage.Links, g.Storage.Links},
		{"spec.config.storage.directories", w.Storage.Directories, g.Storage.Directories},
		{"spec.config.systemd.units", w.Systemd.Units, g.Systemd.Units},
		{"spec.config.passwd", w.Passwd, g.Passwd},
		{"spec.config.kernelArguments", w.KernelArguments, g.KernelArguments},
	}
	for _, s := range sections {
		if !equality.Semantic.DeepEqual(s.w, s.g) {
			return s.name
		}
	}
	if !equality.Semantic.DeepEqual(w, g) {
		return "spec.config"
	}
	return ""
}

// parseIgnition parses a rendered config's Ignition config; an empty one
// is the empty config.
func parseIgnition(raw []byte) (types.Config, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return types.Config{}, nil
	}
	cfg, _, err := ign.ParseCompatibleVersion(raw)
	return cfg, err
}

// SelectorFor is the label selector, as a string for a list request, that
// selects the same MachineConfigs as the pool's machineConfigSelector, and
// whether it selects any (an empty or nil selector selects nothing, see
// Select).
func SelectorFor(selector *metav1.LabelSelector) (string, bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return "", false, err
	}
	return sel.String(), !sel.Empty(), nil
}
