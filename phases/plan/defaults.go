package plan

// The default node disruption policy: the upstream MCO's table
// (pkg/apihelpers defaultClusterPolicies) plus the one rule of upstream's
// first-boot table it no longer needs (the kubelet CA), each with why.
// docs/disruption-policy.md writes the same table out; a test keeps the
// two in step.

// CRIOUnit is the unit that CRI-O's reloads and restarts act on.
const CRIOUnit = "crio.service"

// Units the default table names.
const (
	updateCATrustUnit = "coreos-update-ca-trust.service"
	kubeletUnit       = "kubelet.service"
	iriRegistryUnit   = "iri-registry.service"
)

// DefaultRule is one default rule and why it is there.
type DefaultRule struct {
	FileRule
	Unit string // set for a unit rule instead of a file rule
	Why  string
}

// DefaultRules is the default table, in upstream's order.
func DefaultRules() []DefaultRule {
	reloadCRIO := []Action{{Type: ActReload, Unit: CRIOUnit}}
	file := func(p string, why string, as ...Action) DefaultRule {
		return DefaultRule{FileRule: FileRule{Path: p, Actions: as, Source: "default"}, Why: why}
	}
	return []DefaultRule{
		file("/var/lib/kubelet/config.json", "the pull secret: the kubelet and CRI-O read it at every pull", Action{Type: ActNone}),
		file("/etc/machine-config-daemon/no-reboot/containers-gpg.pub", "CRI-O's signature key: a reload makes CRI-O read it", reloadCRIO...),
		file("/etc/containers/policy.json", "the image signature policy: a reload makes CRI-O read it", reloadCRIO...),
		file(RegistriesConfPath, "mirrors and registries: reload CRI-O; drain first when the change is unsafe for running pods (docs/registries.md)", Action{Type: ActSpecial}),
		file("/etc/containers/registries.d", "sigstore and lookaside settings per registry: a reload makes CRI-O read them", reloadCRIO...),
		file("/etc/crio/policies", "per-namespace signature policies: a reload makes CRI-O read them", reloadCRIO...),
		file("/etc/nmstate/openshift", "NMState's applied-state files, read by NMState's own service when it runs", Action{Type: ActNone}),
		file("/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt", "the cluster's user CA bundle: update-ca-trust rebuilds the trust store, then CRI-O restarts to load it",
			Action{Type: ActRestart, Unit: updateCATrustUnit}, Action{Type: ActRestart, Unit: CRIOUnit}),
		file("/etc/kubernetes/credential-providers", "the kubelet's image credential providers: read when the kubelet starts",
			Action{Type: ActRestart, Unit: kubeletUnit}),
		file("/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf", "a kubelet drop-in: systemd reloads its units, then the kubelet restarts",
			Action{Type: ActDaemonReload}, Action{Type: ActRestart, Unit: kubeletUnit}),
		file("/etc/iri-registry", "the internal release image registry's config", Action{Type: ActRestart, Unit: iriRegistryUnit}),
		file("/usr/local/bin/load-registry-image.sh", "the internal release image registry's loader", Action{Type: ActRestart, Unit: iriRegistryUnit}),
		file("/etc/pki/ca-trust/source/anchors/iri-root-ca.crt", "the internal release image registry's root CA: update-ca-trust rebuilds the trust store",
			Action{Type: ActRestart, Unit: updateCATrustUnit}),
		// Upstream writes the kubelet CA outside rendered configs (its
		// certificate writer), so its table has no rule for it; its
		// first-boot table does (no action). Configs here carry the file,
		// and every CA rotation must not reboot the fleet.
		file("/etc/kubernetes/kubelet-ca.crt", "the kubelet's client CA: the kubelet reloads it by itself (upstream writes it outside rendered configs, with no action)", Action{Type: ActNone}),
		{Unit: iriRegistryUnit, FileRule: FileRule{Actions: []Action{{Type: ActDaemonReload}, {Type: ActRestart, Unit: iriRegistryUnit}}, Source: "default"},
			Why: "the internal release image registry's unit: systemd reloads, then it restarts"},
	}
}

// DefaultSSHKeyActions is what a change of the SSH keys (or core's password
// hash) needs by default: nothing, sshd reads authorized_keys at each login.
func DefaultSSHKeyActions() []Action { return []Action{{Type: ActNone}} }

// DefaultPolicy returns the default node disruption policy.
func DefaultPolicy() Policy {
	var p Policy
	for _, r := range DefaultRules() {
		if r.Unit != "" {
			p.Units = append(p.Units, UnitRule{Name: r.Unit, Actions: r.Actions, Source: r.Source})
			continue
		}
		p.Files = append(p.Files, r.FileRule)
	}
	p.SSHKey, p.SSHKeySource = DefaultSSHKeyActions(), "default"
	return p
}
