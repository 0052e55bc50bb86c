package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/test/testbed"
	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

// osfHash is a yescrypt hash for core ("nodeconfd").
const osfHash = "$y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9SqC.5i5rd.RhAtQ7"

// corePasswd is the passwd section setting core's password hash.
func corePasswd(hash string) string {
	return `"passwd":{"users":[{"name":"core","passwordHash":` + jsonString(hash) + `}]}`
}

// shadowOf reads core's /etc/shadow entry in the node.
func shadowOf(t *testing.T, n *testbed.Node) string {
	t.Helper()
	for _, l := range strings.Split(readNodeFile(t, n, "/etc/shadow"), "\n") {
		if strings.HasPrefix(l, "core:") {
			return l
		}
	}
	t.Fatal("no core entry in /etc/shadow")
	return ""
}

// OS fields 1: extensions and the realtime kernel on an rpm-ostree node,
// with core's password hash. A package the repositories lack fails the
// write: the password hash and the file are rolled back, the staged
// deployment removed. Once the package is there, the retry runs the
// commands machine-config-daemon runs, the node reboots once and
// validates. Going back undoes the kernel swap and the extensions and
// locks the password ("*"), as upstream does.
func TestOSExtensionsKernelTypePassword(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	osConfig(t, "rendered-osf1-a", ign(nil), osImageA)
	b := testbed.MachineConfig("rendered-osf1-b", ign(map[string]string{"/etc/osf1.conf": "osf1\n"}, corePasswd(osfHash)))
	b.Spec.OSImageURL, b.Spec.Extensions, b.Spec.KernelType = osImageA, []string{"usbguard", "sysstat"}, "realtime"
	if err := bed.CreateConfig(ctx, b); err != nil {
		t.Fatal(err)
	}
	fake := rpmOstree(osImageA)
	n, log := nodeOpts(t, "osf1", "rendered-osf1-a", testbed.NodeOptions{OS: &fake, ExtraArgs: []string{"--retry-initial", "2s"}})
	unavailable := filepath.Join(n.Sys.Root, osfake.UnavailablePackagesFile)
	if err := os.WriteFile(unavailable, []byte("usbguard\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shadowBefore := shadowOf(t, n)
	if err := n.SetDesired(ctx, "rendered-osf1-b"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	if c := log.Condition("NodeDegraded"); !strings.Contains(c.Message, "Packages not found: usbguard") ||
		!strings.Contains(c.Message, "rolled back this update's writes") {
		t.Errorf("NodeDegraded %q", c.Message)
	}
	if got := shadowOf(t, n); got != shadowBefore {
		t.Errorf("core's shadow entry after the failed write = %q, want %q", got, shadowBefore)
	}
	if _, err := os.Stat(filepath.Join(n.Sys.Root, "/etc/osf1.conf")); !os.IsNotExist(err) {
		t.Errorf("/etc/osf1.conf after the failed write: %v", err)
	}
	if out, err := n.Sys.Exec(ctx, "rpm-ostree", "status", "--json"); err != nil || strings.Count(string(out), `"checksum":`) != 1 {
		t.Errorf("a staged deployment is left after the failed write: %s %v", out, err)
	}

	// The repositories have the package now: the retry converges.
	if err := os.Remove(unavailable); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-osf1-b"); err != nil {
		t.Fatal(err)
	}
	swap := "rpm-ostree override remove kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra" +
		" --install kernel-rt-core --install kernel-rt-modules --install kernel-rt-modules-extra"
	ext := "rpm-ostree update --install sysstat --install usbguard"
	want := []string{swap, ext, "rpm-ostree cleanup -p", swap, ext}
	if got := callsLike(t, n, "override", "update", "cleanup -p"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("package calls:\n got %q\nwant %q", got, want)
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2 (one reboot)", b)
	}
	if got := shadowOf(t, n); !strings.HasPrefix(got, "core:"+osfHash+":") {
		t.Errorf("core's shadow entry = %q", got)
	}
	if out, err := n.Sys.Exec(ctx, "passwd", "-S", "core"); err != nil || !strings.Contains(string(out), "core P ") {
		t.Errorf("passwd -S core in the node: %s %v (want a usable password)", out, err)
	}
	if c := log.Condition("AppliedFilesAndOS"); !strings.Contains(c.Message, "password hash") ||
		!strings.Contains(c.Message, "the realtime kernel") || !strings.Contains(c.Message, "--install usbguard") {
		t.Errorf("AppliedFilesAndOS %q", c.Message)
	}
	out, err := n.Sys.Exec(ctx, "rpm-ostree", "status", "--json")
	if err != nil || !strings.Contains(string(out), `"kernel-rt-core"`) || !strings.Contains(string(out), `"requested-base-removals"`) {
		t.Errorf("rpm-ostree status in the node: %s %v", out, err)
	}

	// Back to a: the swap undone, the extensions removed, core locked.
	if err := n.SetDesired(ctx, "rendered-osf1-a"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-osf1-a"); err != nil {
		t.Fatal(err)
	}
	reset := "rpm-ostree override reset kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra" +
		" --uninstall kernel-rt-core --uninstall kernel-rt-modules --uninstall kernel-rt-modules-extra"
	want = append(want, reset, "rpm-ostree update --uninstall sysstat --uninstall usbguard")
	if got := callsLike(t, n, "override", "update", "cleanup -p"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("package calls:\n got %q\nwant %q", got, want)
	}
	if got := shadowOf(t, n); !strings.HasPrefix(got, "core:*:") {
		t.Errorf("core's shadow entry after going back = %q", got)
	}
	if b := n.Sys.Boots(); b != 3 {
		t.Errorf("boots = %d, want 3", b)
	}
}

// OS fields 2: a node with no OS updater (a plain distribution) does not
// manage the OS fields, as machine-config-daemon does not on a node that is
// not CoreOS: a config with an OS image, kernel arguments, extensions and
// a kernel type is applied for its files and core's password hash, the
// status says the OS is not managed, and the config may drop its links,
// which stay on the node, as upstream leaves them.
func TestOSFieldsWithoutUpdater(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	links := `"storage":{"files":[],"links":[{"path":"/etc/osf2-link","target":"/etc/hostname"}]}`
	config(t, "rendered-osf2-a", `{"ignition":{"version":"3.4.0"},`+links+`}`)
	b := testbed.MachineConfig("rendered-osf2-b", ign(map[string]string{"/etc/osf2.conf": "osf2\n"}, corePasswd(osfHash)))
	b.Spec.OSImageURL, b.Spec.KernelArguments = osImageB, []string{"nosmt"}
	b.Spec.Extensions, b.Spec.KernelType = []string{"usbguard"}, "realtime"
	if err := bed.CreateConfig(ctx, b); err != nil {
		t.Fatal(err)
	}
	n, log := node(t, "osf2", "rendered-osf2-a")
	if !strings.Contains(n.DaemonLog(), `"updater": "none"`) {
		t.Error("the daemon did not log that it has no OS updater")
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(n.Sys.Root, "/etc/osf2-link")); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-osf2-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-osf2-b"); err != nil {
		t.Fatal(err)
	}
	if c := log.Condition("UpdateCompatible"); !strings.Contains(c.Message, "OS not managed") || strings.Contains(c.Message, "OS image changed") {
		t.Errorf("UpdateCompatible %q", c.Message)
	}
	if c := log.Condition("AppliedFilesAndOS"); !strings.Contains(c.Message, "OS not managed on this node") ||
		!strings.Contains(c.Message, "password hash") || strings.Contains(c.Message, "Staged") {
		t.Errorf("AppliedFilesAndOS %q", c.Message)
	}
	if got := readNodeFile(t, n, "/etc/osf2.conf"); got != "osf2\n" {
		t.Errorf("/etc/osf2.conf = %q", got)
	}
	if got := shadowOf(t, n); !strings.HasPrefix(got, "core:"+osfHash+":") {
		t.Errorf("core's shadow entry = %q", got)
	}
	if target, err := os.Readlink(filepath.Join(n.Sys.Root, "/etc/osf2-link")); err != nil || target != "/etc/hostname" {
		t.Errorf("the dropped link on the node: %q, %v (left, as upstream leaves it)", target, err)
	}
	if a := getNode(t, "osf2").Annotations["machineconfiguration.openshift.io/state"]; a != "Done" {
		t.Errorf("state = %q", a)
	}
}

// OS fields 3: `start --once-from` lays a rendered config with an OS image
// onto a node with no OS updater: the files are written, the OS fields
// left alone, and the run says so.
func TestOnceFromOSImageWithoutUpdater(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, err := bed.AddNode(ctx, "osf3", testbed.NodeOptions{NoDaemon: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
	mc := testbed.MachineConfig("rendered-osf3-a", ign(map[string]string{"/etc/osf3.conf": "osf3\n"}))
	mc.Spec.OSImageURL, mc.Spec.KernelType = osImageB, plan.KernelRealtime
	out, err := onceFrom(ctx, t, n, mc, "--skip-reboot")
	if err != nil {
		t.Fatalf("once-from: %v\n%s", err, out)
	}
	if !strings.Contains(out, "OS not managed") {
		t.Errorf("the run does not say the OS is not managed:\n%s", out)
	}
	if got := readNodeFile(t, n, "/etc/osf3.conf"); got != "osf3\n" {
		t.Errorf("/etc/osf3.conf = %q", got)
	}
	wantOnceApplied(t, n, "rendered-osf3-a")
}
