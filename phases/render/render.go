// Package render merges the MachineConfigs a pool selects into the pool's
// rendered MachineConfig, as the upstream machine-config-operator's render
// controller does (pkg/controller/render, MergeMachineConfigs in
// pkg/controller/common): name order with the worker pool's configs first,
// Ignition's own v3 merge, kernel arguments and extensions appended, FIPS
// and a non-default kernel type winning, the last OS image set. Each
// fragment is first held to the daemon's own parse (phases/plan), so a
// config the nodes would refuse is refused here, naming the fragment and
// its field. The package is pure: no I/O, no API client.
package render

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// The labels and annotations upstream reads and writes on MachineConfigs.
const (
	// RoleLabel is the role of a fragment; the default pools select by it.
	RoleLabel = "machineconfiguration.openshift.io/role"
	// GeneratedByAnnotation marks a config a controller generated with the
	// controller's version: rendered configs, and upstream's generated
	// fragments, whose OS image never overrides the base one.
	GeneratedByAnnotation = "machineconfiguration.openshift.io/generated-by-controller-version"
	// OSImageOverriddenAnnotation marks a rendered config whose OS image is
	// not the base one.
	OSImageOverriddenAnnotation = "machineconfiguration.openshift.io/os-image-url-overridden"
	// Prefix starts every rendered config's name.
	Prefix = "rendered-"
	// workerPool is the pool whose fragments merge first, so that a custom
	// pool's own fragments override the worker ones they inherit.
	workerPool = "worker"
	// MaxSize is upstream's cap on a rendered config's JSON (etcd's request
	// limit, 1.5 MiB).
	MaxSize = 1572864
)

// Options are what a rendering takes besides the fragments.
type Options struct {
	// BaseOSImageURL is the OS image a pool runs when no fragment sets one
	// (upstream: the release's, from the ControllerConfig); empty: none,
	// the nodes keep their OS.
	BaseOSImageURL string
	// BaseOSExtensionsImage is the same for the extensions image.
	BaseOSExtensionsImage string
	// ControllerVersion, when set, is written to GeneratedByAnnotation.
	ControllerVersion string
	// Limits are the daemon's size caps, which every fragment and the
	// rendered config must keep.
	Limits plan.Limits
}

// Result is a rendered config and what it was rendered from.
type Result struct {
	// Config is the rendered MachineConfig, named Prefix+pool+"-"+hash.
	Config *mcfgv1.MachineConfig
	// Sources are the fragments in merge order, as the pool's
	// spec.configuration.source lists them.
	Sources []corev1.ObjectReference
}

// Render merges the fragments of pool (already selected, see Select) into
// its rendered config. A fragment the daemon's parse refuses, or that
// cannot merge with the others, yields a *plan.ConfigError naming it.
func Render(pool string, configs []*mcfgv1.MachineConfig, o Options) (Result, error) {
	if len(configs) == 0 {
		return Result{}, fmt.Errorf("pool %s: no MachineConfigs to render", pool)
	}
	for _, c := range configs {
		if err := checkFragment(c, o.Limits); err != nil {
			return Result{}, err
		}
	}
	ordered, err := mergeOrder(configs)
	if err != nil {
		return Result{}, err
	}
	spec, err := merge(ordered, o)
	if err != nil {
		return Result{}, err
	}
	name, err := Name(pool, spec)
	if err != nil {
		return Result{}, err
	}
	mc := &mcfgv1.MachineConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       spec,
	}
	annotate(mc, o)
	if err := checkRendered(mc, ordered, o); err != nil {
		return Result{}, err
	}
	return Result{Config: mc, Sources: sources(ordered)}, nil
}

// annotate sets the annotations upstream puts on a rendered config.
func annotate(mc *mcfgv1.MachineConfig, o Options) {
	a := map[string]string{}
	if o.ControllerVersion != "" {
		a[GeneratedByAnnotation] = o.ControllerVersion
	}
	if mc.Spec.OSImageURL != o.BaseOSImageURL {
		a[OSImageOverriddenAnnotation] = "true"
	}
	if len(a) > 0 {
		mc.Annotations = a
	}
}

// Name is the rendered config's name: the pool and a hash of the spec, so
// that the same fragments give the same name and any change another one.
// Upstream hashes the spec's YAML with salted MD5; this is the SHA-256 of
// its JSON, cut to the same 32 hex digits (the names cannot match
// upstream's anyway: the base OS image differs).
func Name(pool string, spec mcfgv1.MachineConfigSpec) (string, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("hashing the rendered spec: %w", err)
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%s%s-%x", Prefix, pool, sum[:16]), nil
}

// sources lists the fragments as upstream's getMachineConfigRefs does.
func sources(configs []*mcfgv1.MachineConfig) []corev1.ObjectReference {
	refs := make([]corev1.ObjectReference, len(configs))
	for i, c := range configs {
		refs[i] = corev1.ObjectReference{Kind: "MachineConfig", Name: c.Name, APIVersion: mcfgv1.GroupVersion.String()}
	}
	return refs
}
