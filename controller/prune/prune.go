// Package prune decides which rendered MachineConfigs may be deleted, the
// garbage collection of issue 40 (upstream: `oc adm prune
// renderedmachineconfigs`). It is pure, as controller/rollout: it reads API
// objects only, so the controller's --rendered-config-retention and the
// `nodeconfd prune` command decide alike, and every case is table-tested.
//
// A config may be deleted only when all of these hold:
//   - the controller created it (CreatedBy: a controlling owner reference to
//     its MachineConfigPool and the name rendered-<that pool>-<32 hex
//     digits>, the marker ensureRendered writes and the admission policy
//     nodeconfd-controller checks on delete); a rendered-* config made by
//     anyone else is never deleted;
//   - nothing references it: no pool's spec.configuration or
//     status.configuration (the config the SLO rollback hands back), no
//     node's currentConfig, desiredConfig or failedConfig annotation, no
//     MachineConfigNode's spec.configVersion.desired or
//     status.configVersion.current or desired;
//   - it is not among the Keep newest (by creationTimestamp, then name) of
//     its pool's unreferenced configs.
package prune

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/nodeconfd/nodeconfd/names"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// configAnnotations are the node annotations that name a config (the
// names the daemon writes, package names).
var configAnnotations = []string{names.CurrentConfig, names.DesiredConfig, names.FailedConfig}

// ownerAPIVersion is the owner reference's apiVersion ensureRendered writes.
const ownerAPIVersion = "machineconfiguration.openshift.io/v1"

// renderedName is a rendered config's name as phases/render makes it and
// the admission policy requires it: rendered-<pool>-<32 hex digits>.
var renderedName = regexp.MustCompile(`^rendered-[a-z0-9]([-a-z0-9]*[a-z0-9])?-[0-9a-f]{32}$`)

// CreatedBy is the pool whose controller created mc, and whether it did:
// mc has a controlling owner reference to a MachineConfigPool (apiVersion
// machineconfiguration.openshift.io/v1) and is named rendered-<that
// pool>-<32 hex digits>. The admission policy nodeconfd-controller lets the
// controller delete exactly these (manifests/05-controller.yaml).
func CreatedBy(mc *mcfgv1.MachineConfig) (string, bool) {
	ref := metav1.GetControllerOfNoCopy(mc)
	if ref == nil || ref.APIVersion != ownerAPIVersion || ref.Kind != "MachineConfigPool" {
		return "", false
	}
	if !renderedName.MatchString(mc.Name) || mc.Name != "rendered-"+ref.Name+"-"+mc.Name[len(mc.Name)-32:] {
		return "", false
	}
	return ref.Name, true
}

// Input is the cluster as the decision sees it.
type Input struct {
	Pools   []*mcfgv1.MachineConfigPool
	Nodes   []*corev1.Node
	MCNs    []*mcfgv1.MachineConfigNode
	Configs []*mcfgv1.MachineConfig
	// Keep is how many of each pool's unreferenced configs are kept, the
	// newest; 0 keeps none of them.
	Keep int
}

// Verdict is the decision on one rendered config.
type Verdict struct {
	Config *mcfgv1.MachineConfig
	// Pool is the pool that owns it; "" for a config the controller did
	// not create.
	Pool   string
	Delete bool
	// Why says why it is kept or deleted, for the log and the command.
	Why string
}

// Decide gives a verdict on every config named rendered-*: those a pool's
// controller created by pool, newest first, then the others (always kept),
// by name. Other MachineConfigs (the fragments) get none.
func Decide(in Input) []Verdict {
	refs := references(in)
	byPool := map[string][]*mcfgv1.MachineConfig{}
	var others []Verdict
	for _, mc := range in.Configs {
		if !strings.HasPrefix(mc.Name, "rendered-") {
			continue
		}
		pool, ok := CreatedBy(mc)
		if !ok {
			others = append(others, Verdict{Config: mc, Why: "not created by the controller " +
				"(no controlling owner reference to its MachineConfigPool, or not named rendered-<pool>-<hash>)"})
			continue
		}
		byPool[pool] = append(byPool[pool], mc)
	}
	pools := make([]string, 0, len(byPool))
	for p := range byPool {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	var out []Verdict
	for _, pool := range pools {
		mcs := byPool[pool]
		sort.Slice(mcs, func(i, j int) bool { return newer(mcs[i], mcs[j]) })
		unused := 0
		for _, mc := range mcs {
			v := Verdict{Config: mc, Pool: pool}
			switch r := refs[mc.Name]; {
			case len(r) > 0:
				v.Why = "in use: " + strings.Join(r, ", ")
			case unused < in.Keep:
				unused++
				v.Why = fmt.Sprintf("unused, among the newest %d unused of pool %s", in.Keep, pool)
			default:
				v.Delete = true
				v.Why = fmt.Sprintf("unused, older than the newest %d unused of pool %s", in.Keep, pool)
			}
			out = append(out, v)
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].Config.Name < others[j].Config.Name })
	return append(out, others...)
}

// newer orders configs newest first: by creationTimestamp (whole seconds),
// then by name, so that the order is the same at every reconcile.
func newer(a, b *mcfgv1.MachineConfig) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

// references names, for each config some object names, what names it.
func references(in Input) map[string][]string {
	refs := map[string][]string{}
	add := func(config, by string) {
		if config != "" && !slices.Contains(refs[config], by) { // a pool may be given twice (cache and fresh)
			refs[config] = append(refs[config], by)
		}
	}
	for _, p := range in.Pools {
		add(p.Spec.Configuration.Name, "pool "+p.Name+"'s spec.configuration")
		add(p.Status.Configuration.Name, "pool "+p.Name+"'s status.configuration")
	}
	for _, n := range in.Nodes {
		for _, a := range configAnnotations {
			add(n.Annotations[a], "node "+n.Name+"'s "+strings.TrimPrefix(a, "machineconfiguration.openshift.io/"))
		}
	}
	for _, m := range in.MCNs {
		add(m.Spec.ConfigVersion.Desired, "MachineConfigNode "+m.Name+"'s spec.configVersion.desired")
		if v := m.Status.ConfigVersion; v != nil {
			add(v.Current, "MachineConfigNode "+m.Name+"'s status.configVersion.current")
			add(v.Desired, "MachineConfigNode "+m.Name+"'s status.configVersion.desired")
		}
	}
	return refs
}
