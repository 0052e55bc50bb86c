package plan

import (
	"fmt"
	"slices"
	"strings"
)

// kernelTypes are the kernel types machine-config-operator knows ("" is
// the default kernel).
func kernelTypes() []string { return []string{"", "default", "realtime", "64k-pages"} }

// knownExtensions are the RHCOS extensions machine-config-operator
// supports; it refuses any other name.
func knownExtensions() []string {
	return []string{"two-node-ha", "wasm", "ipsec", "usbguard", "kerberos", "kernel-devel", "sandboxed-containers", "sysstat"}
}

// osFields checks spec.extensions and spec.kernelType on their own, as
// machine-config-operator does. Whether this node can change them is
// decided against the current config (see UnsupportedOSFields).
func (p *parser) osFields(extensions []string, kernelType string) {
	for i, e := range extensions {
		if !slices.Contains(knownExtensions(), e) {
			p.add(fmt.Sprintf("spec.extensions[%d]", i), "unknown extension %q (known: %s)", e, strings.Join(knownExtensions(), ", "))
		}
	}
	if !slices.Contains(kernelTypes(), kernelType) {
		p.add("spec.kernelType", "unknown kernel type %q (known: default, realtime, 64k-pages)", kernelType)
	}
}

// UnsupportedOSFields names the fields of the diff that need an OS package
// change (spec.extensions, spec.kernelType), with why. The daemon cannot
// make them: rpm-ostree layers packages from repositories a node of this
// kind does not have, and bootc takes them from the image only. Such a
// change is refused in prepare rather than rebooted into and then
// reported done.
func UnsupportedOSFields(d Diff) (field, msg string) {
	switch {
	case d.ExtensionsChanged:
		return "spec.extensions", "changing the OS extensions is not supported on this host: build them into the OS image (spec.osImageURL) instead"
	case d.KernelTypeChanged:
		return "spec.kernelType", "changing the kernel type is not supported on this host: use an OS image with the kernel you want (spec.osImageURL) instead"
	}
	return "", ""
}
