package plan

import (
	"fmt"
	"slices"
	"strings"
)

// cmdlineMax is the longest kernel command line the daemon sets: x86's
// COMMAND_LINE_SIZE is 2048 bytes, and longer lines are cut by the kernel
// or refused by the boot loader.
const cmdlineMax = 2048

// reservedKargs are the kernel argument keys the OS and its boot loader
// set themselves: ostree picks the deployment (ostree=), the boot loader
// names the kernel and initramfs (BOOT_IMAGE=, initrd=), the installer the
// root and boot file systems (root=, rootflags=, rootfstype=, boot=), and
// init= replaces the OS's init. Changing them through a config breaks the
// boot or the OS updater's bookkeeping.
func reservedKargs() []string {
	return []string{"ostree", "BOOT_IMAGE", "initrd", "root", "rootflags", "rootfstype", "boot", "init"}
}

// checkKernelArg says what is wrong with one kernel argument (as split by
// SplitKernelArgs), if anything.
func checkKernelArg(a string) string {
	if msg := checkText("kernel argument", a); msg != "" {
		return msg
	}
	if strings.HasPrefix(a, "-") {
		// "--" ends the kernel's arguments: what follows goes to init.
		return fmt.Sprintf("kernel argument %q starts with -", a)
	}
	key, _, _ := strings.Cut(strings.Trim(a, `"`), "=")
	if key == "" {
		return fmt.Sprintf("kernel argument %q has an empty key", a)
	}
	// The kernel treats - and _ in parameter names alike.
	norm := strings.ReplaceAll(key, "-", "_")
	if slices.ContainsFunc(reservedKargs(), func(r string) bool { return strings.ReplaceAll(r, "-", "_") == norm }) {
		return fmt.Sprintf("kernel argument %q sets %s=, which the OS and its boot loader own", a, key)
	}
	return ""
}

// checkCmdline says what is wrong with the whole set of desired kernel
// arguments, if anything.
func checkCmdline(args []string) string {
	if n := len(strings.Join(args, " ")); n > cmdlineMax {
		return fmt.Sprintf("the kernel arguments are %d bytes long joined by spaces; the longest command line the daemon sets is %d", n, cmdlineMax)
	}
	return ""
}
