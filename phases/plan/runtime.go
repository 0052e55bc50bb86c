package plan

import "strings"

// Runtime is the container runtime a node runs, as its kubelet reports it
// (Node status.nodeInfo.containerRuntimeVersion). The default node
// disruption policy is upstream's, written for CRI-O; on a containerd node
// the rules that act on CRI-O are replaced (ContainerdRules).
type Runtime string

const (
	// RuntimeUnknown is a runtime the daemon has no rules of its own for
	// (nothing reported, docker://, a stand-in): upstream's CRI-O rules.
	RuntimeUnknown    Runtime = ""
	RuntimeCRIO       Runtime = "cri-o"
	RuntimeContainerd Runtime = "containerd"
)

// ContainerdUnit is the unit containerd's restarts act on.
const ContainerdUnit = "containerd.service"

// RuntimeOf reads the runtime from a Node's containerRuntimeVersion
// ("containerd://2.1.0", "cri-o://1.31.0"): the part before "://". Any other
// name, or a value without "://", is RuntimeUnknown.
func RuntimeOf(containerRuntimeVersion string) Runtime {
	name, _, ok := strings.Cut(strings.TrimSpace(containerRuntimeVersion), "://")
	if !ok {
		return RuntimeUnknown
	}
	switch rt := Runtime(strings.ToLower(name)); rt {
	case RuntimeCRIO, RuntimeContainerd:
		return rt
	}
	return RuntimeUnknown
}

// String names the runtime for logs and plans.
func (r Runtime) String() string {
	if r == RuntimeUnknown {
		return "unknown"
	}
	return string(r)
}

// SourceContainerdDefault is the Source of a default rule as a containerd
// node has it (ContainerdRules).
const SourceContainerdDefault = "default on containerd nodes"

// ContainerdRules is the default table's change on a containerd node: the
// rules of containerd's own files, added, and the default rules that act
// on CRI-O, replaced (same path). docs/disruption-policy.md writes it out.
func ContainerdRules() []DefaultRule {
	file := func(p string, why string, as ...Action) DefaultRule {
		return DefaultRule{FileRule: FileRule{Path: p, Actions: as, Source: SourceContainerdDefault}, Why: why}
	}
	none := Action{Type: ActNone}
	restart := Action{Type: ActRestart, Unit: ContainerdUnit}
	return []DefaultRule{
		file("/etc/machine-config-daemon/no-reboot/containers-gpg.pub", "a signature key of CRI-O's policy: containerd does not read it; the container tools (podman, skopeo) read it at each run", none),
		file("/etc/containers/policy.json", "CRI-O's and the container tools' signature policy: containerd does not read it; the tools read it at each run", none),
		file(RegistriesConfPath, "CRI-O's and the container tools' registries: containerd does not read it (its mirrors are in /etc/containerd/certs.d); the tools read it at each run, so no drain either", none),
		file("/etc/containers/registries.d", "sigstore and lookaside settings of CRI-O and the container tools: containerd does not read them", none),
		file("/etc/crio/policies", "CRI-O's per-namespace signature policies: no CRI-O runs here", none),
		file("/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt", "the cluster's user CA bundle: update-ca-trust rebuilds the trust store, then containerd restarts to load it (it reads the system roots once)",
			Action{Type: ActRestart, Unit: updateCATrustUnit}, restart),
		file("/etc/containerd/certs.d", "registry host files (hosts.toml, certificates): containerd reads them at each pull when its config_path names this folder", none),
		file("/etc/containerd/config.toml", "containerd's config: read when containerd starts (it has no reload)", restart),
		file("/etc/containerd/conf.d", "containerd's config drop-ins (imported by config.toml): read when containerd starts", restart),
	}
}

// ForRuntime is p as a node running rt applies it. On a containerd node
// each default rule ContainerdRules replaces takes its actions there, and
// its rules for containerd's own files are added where p has no rule of
// that path; an administrator's rules are left as they are (a rule of
// theirs that names crio.service is refused in prepare as any unit the
// node lacks). On a CRI-O node or an unknown runtime p is returned as it
// is: upstream's rules.
func (p Policy) ForRuntime(rt Runtime) Policy {
	if rt != RuntimeContainerd {
		return p
	}
	out := p
	out.Files = append([]FileRule(nil), p.Files...)
	for _, r := range ContainerdRules() {
		i := indexOf(out.Files, func(f FileRule) bool { return f.Path == r.Path })
		switch {
		case i < 0:
			out.Files = append(out.Files, r.FileRule)
		case out.Files[i].Source == "default":
			out.Files[i] = r.FileRule
		}
	}
	return out
}
