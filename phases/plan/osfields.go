package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Kernel types as machine-config-operator names them ("" is the default).
const (
	KernelDefault  = "default"
	KernelRealtime = "realtime"
	Kernel64kPages = "64k-pages"
)

// kernelTypes are the kernel types machine-config-operator knows.
func kernelTypes() []string { return []string{"", KernelDefault, KernelRealtime, Kernel64kPages} }

// extensionPackages maps each extension machine-config-operator supports
// to the packages it layers with rpm-ostree (its SupportedExtensions). Any
// other name is refused, as upstream refuses it ("wasm" was dropped there).
func extensionPackages() map[string][]string {
	return map[string][]string{
		"two-node-ha":          {"pacemaker", "pcs", "fence-agents-all"},
		"ipsec":                {"NetworkManager-libreswan", "libreswan", "openvswitch3.5-ipsec"},
		"usbguard":             {"usbguard"},
		"kerberos":             {"krb5-workstation", "libkadm5"},
		"kernel-devel":         {"kernel-devel", "kernel-headers"},
		"sandboxed-containers": {"kata-containers"},
		"sysstat":              {"sysstat"},
	}
}

// KnownExtensions lists the extensions the daemon accepts, sorted.
func KnownExtensions() []string { return slices.Sorted(maps.Keys(extensionPackages())) }

// ExtensionPackages is the sorted set of packages that extensions layer.
// Unknown names add nothing (the parser refuses them).
func ExtensionPackages(extensions []string) []string {
	all := extensionPackages()
	var out []string
	for _, e := range extensions {
		out = append(out, all[e]...)
	}
	return sortedSet(out)
}

// AllExtensionPackages is every package an extension may layer, sorted:
// the packages the daemon removes when no extension asks for them, and the
// only ones (a package an administrator layered by hand is left alone).
func AllExtensionPackages() []string {
	var out []string
	for _, pkgs := range extensionPackages() {
		out = append(out, pkgs...)
	}
	return sortedSet(out)
}

// KernelPackages are the packages of each kernel type, as
// machine-config-daemon swaps them: the default kernel's base packages are
// removed (rpm-ostree override remove) and the other type's installed.
// kernel-rt is not among them: it is a meta-package that pulls in more.
func KernelPackages(kernelType string) []string {
	switch CanonicalKernelType(kernelType) {
	case KernelRealtime:
		return []string{"kernel-rt-core", "kernel-rt-modules", "kernel-rt-modules-extra"}
	case Kernel64kPages:
		return []string{"kernel-64k-core", "kernel-64k-modules", "kernel-64k-modules-core", "kernel-64k-modules-extra"}
	}
	return []string{"kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra"}
}

// KernelTypeOf tells a deployment's kernel type from its requested base
// removals and layered packages, as machine-config-daemon does before it
// reverts a swap: a swap is both a removed kernel package and a layered
// kernel-rt-* or kernel-64k-* one; anything else is the default kernel.
func KernelTypeOf(requested, removals []string) string {
	removed := slices.ContainsFunc(removals, isKernelPackage)
	switch {
	case removed && slices.ContainsFunc(requested, func(p string) bool { return strings.HasPrefix(p, "kernel-rt-") }):
		return KernelRealtime
	case removed && slices.ContainsFunc(requested, func(p string) bool { return strings.HasPrefix(p, "kernel-64k-") }):
		return Kernel64kPages
	}
	return KernelDefault
}

func isKernelPackage(p string) bool { return p == "kernel" || strings.HasPrefix(p, "kernel-") }

// LayeredExtensions is the part of a deployment's layered packages that
// extensions manage, sorted.
func LayeredExtensions(requested []string) []string {
	all := AllExtensionPackages()
	var out []string
	for _, p := range requested {
		if slices.Contains(all, p) {
			out = append(out, p)
		}
	}
	return sortedSet(out)
}

// osFields checks spec.extensions and spec.kernelType on their own, as
// machine-config-operator does. Whether this node's OS updater can change
// them is checked in prepare, against the node.
func (p *parser) osFields(extensions []string, kernelType string) {
	all := extensionPackages()
	for i, e := range extensions {
		if _, ok := all[e]; !ok {
			p.add(fmt.Sprintf("spec.extensions[%d]", i), "unknown extension %q (known: %s)", e, strings.Join(KnownExtensions(), ", "))
		}
	}
	if !slices.Contains(kernelTypes(), kernelType) {
		p.add("spec.kernelType", "unknown kernel type %q (known: default, realtime, 64k-pages)", kernelType)
	}
}

// CanonicalKernelType maps the empty kernel type to "default", as
// machine-config-daemon does.
func CanonicalKernelType(t string) string {
	if t == "" {
		return KernelDefault
	}
	return t
}
