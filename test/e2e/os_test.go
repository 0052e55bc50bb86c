package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

// OS images of the OS tests; the fake rpm-ostree and bootc pull anything.
const (
	osImageA = "quay.io/nodeconfd/os@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	osImageB = "quay.io/nodeconfd/os@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// baseKargs are the kernel arguments of the OS itself, not of a config.
var baseKargs = []string{"rw", "root=LABEL=root"}

// osConfig creates a rendered config with an OS image and kernel arguments.
func osConfig(t *testing.T, name, ignition, image string, kargs ...string) {
	t.Helper()
	mc := testbed.MachineConfig(name, ignition)
	mc.Spec.OSImageURL = image
	mc.Spec.KernelArguments = kargs
	if err := bed.CreateConfig(context.Background(), mc); err != nil {
		t.Fatal(err)
	}
}

// osNode starts a node with the fake rpm-ostree (or bootc) booted at image
// with kargs, running config base. Pulls are retried quickly.
func osNode(t *testing.T, name, base string, fake osfake.Options) (*testbed.Node, *testbed.StatusLog) {
	t.Helper()
	n, log := nodeOpts(t, name, base, testbed.NodeOptions{OS: &fake, ExtraArgs: []string{
		"--os-pull-attempts", "3", "--os-pull-retry-initial", "200ms", "--os-pull-retry-max", "1s"}})
	t.Cleanup(func() {
		if t.Failed() {
			calls, _ := n.OSCalls()
			t.Logf("OS tool calls of %s:\n%s", name, strings.Join(calls, "\n"))
		}
	})
	return n, log
}

func rpmOstree(image string, kargs ...string) osfake.Options {
	return osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + image, Kargs: append(append([]string{}, baseKargs...), kargs...)}
}

// callsLike returns the calls that contain any of the words.
func callsLike(t *testing.T, n *testbed.Node, words ...string) []string {
	t.Helper()
	calls, err := n.OSCalls()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range calls {
		for _, w := range words {
			if strings.Contains(c, w) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// OS 1: a new OS image is staged, the node reboots once into it, Updated.
func TestOSImageUpdate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	osConfig(t, "rendered-os1-a", ign(nil), osImageA)
	osConfig(t, "rendered-os1-b", ign(nil), osImageB)
	n, log := osNode(t, "os1", "rendered-os1-a", rpmOstree(osImageA))
	if !strings.Contains(n.DaemonLog(), `"updater": "rpm-ostree"`) {
		t.Error("the daemon did not log its OS updater")
	}
	if v, err := n.Metric(`nodeconfd_os_updater{updater="rpm-ostree"}`); err != nil || v != 1 {
		t.Errorf("OS updater metric = %v, %v", v, err)
	}
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-os1-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-os1-b"); err != nil {
		t.Fatal(err)
	}
	wantSeq(t, log.Transitions(from), rebootSequence)
	if c := log.Condition("AppliedFilesAndOS"); c.Message != "Applied 0 files. Staged OS image "+osImageB {
		t.Errorf("AppliedFilesAndOS message %q", c.Message)
	}
	if c := log.Condition("RebootedNode"); !strings.Contains(c.Message, "booted OS image ostree-unverified-registry:"+osImageB) ||
		!strings.Contains(c.Message, "kept the rollback deployment for the health gate") {
		t.Errorf("RebootedNode message %q", c.Message)
	}
	// The rollback deployment goes once the health gate passed.
	if c := log.Condition("HealthChecked"); !strings.Contains(c.Message, "removed the rollback deployment") {
		t.Errorf("HealthChecked message %q", c.Message)
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2 (one reboot)", b)
	}
	boots, err := n.OSBoots()
	if err != nil || strings.Join(boots, " ") != "ostree-unverified-registry:"+osImageA+" ostree-unverified-registry:"+osImageB {
		t.Errorf("booted images %q, %v", boots, err)
	}
	want := []string{"rpm-ostree rebase --experimental -- ostree-unverified-registry:" + osImageB, "rpm-ostree cleanup -r"}
	if got := callsLike(t, n, "rebase", "--append", "--delete", "cleanup"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changing calls:\n got %q\nwant %q", got, want)
	}
	out, err := n.Sys.Exec(ctx, "rpm-ostree", "status", "--json")
	if err != nil || strings.Count(string(out), `"container-image-reference":`) != 1 {
		t.Errorf("after cleanup, rpm-ostree status in the node: %s %v", out, err)
	}
}

// OS 2: kernel arguments added and removed with a file change: one kargs
// call with the exact arguments, one reboot.
func TestOSKernelArgsWithFile(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	osConfig(t, "rendered-os2-a", ign(nil), osImageA, "a=1", "b")
	osConfig(t, "rendered-os2-b", ign(map[string]string{"/etc/os2.conf": "os2\n"}), osImageA, "b", `c="x y"`, "c")
	n, log := osNode(t, "os2", "rendered-os2-a", rpmOstree(osImageA, "a=1", "b"))
	if err := n.SetDesired(ctx, "rendered-os2-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-os2-b"); err != nil {
		t.Fatal(err)
	}
	want := []string{`rpm-ostree kargs --delete-if-present=a=1 --append=c="x y" --append=c`}
	if got := callsLike(t, n, "rebase", "--append", "--delete"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changing calls:\n got %q\nwant %q", got, want)
	}
	if c := log.Condition("AppliedFilesAndOS"); c.Message != `Applied 1 file. Staged kernel arguments +c="x y" +c -a=1` {
		t.Errorf("AppliedFilesAndOS message %q", c.Message)
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2 (one reboot)", b)
	}
	if got := readNodeFile(t, n, "/etc/os2.conf"); got != "os2\n" {
		t.Errorf("file = %q", got)
	}
	out, err := n.Sys.Exec(ctx, "rpm-ostree", "kargs")
	if err != nil || !regexp.MustCompile(`^rw root=LABEL=root b c="x y" c ostree=/ostree/boot\.1/fedora-coreos/[0-9a-f]{64}/[0-9]+$`).MatchString(strings.TrimSpace(string(out))) {
		t.Errorf("booted kernel arguments %q, %v", out, err)
	}
}

// OS 3: the image pull fails: retried, then reported; the files of the same
// update are rolled back. Once pulls work again the retry converges.
func TestOSPullFailure(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	osConfig(t, "rendered-os3-a", ign(nil), osImageA)
	osConfig(t, "rendered-os3-b", ign(map[string]string{"/etc/os3.conf": "os3\n"}), osImageB)
	n, log := osNode(t, "os3", "rendered-os3-a", rpmOstree(osImageA))
	if err := n.FailOSPulls(1000); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-os3-b"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	c := log.Condition("AppliedFilesAndOS")
	for _, want := range []string{"Error: staging the OS update with rpm-ostree: pulling OS image " + osImageB,
		"rpm-ostree rebase --experimental -- ostree-unverified-registry:" + osImageB,
		"pinging container registry quay.io", "(failed 3 times)", "(rolled back this update's writes)"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("AppliedFilesAndOS message lacks %q: %q", want, c.Message)
		}
	}
	if c.Status != "Unknown" || !strings.Contains(log.Condition("NodeDegraded").Message, "pinging container registry") {
		t.Errorf("AppliedFilesAndOS %s; NodeDegraded %q", c.Status, log.Condition("NodeDegraded").Message)
	}
	if _, err := os.Stat(filepath.Join(n.Sys.Root, "/etc/os3.conf")); !os.IsNotExist(err) {
		t.Errorf("/etc/os3.conf should be rolled back: %v", err)
	}
	if got := len(callsLike(t, n, "rebase")); got < 3 {
		t.Errorf("%d pulls, want at least 3", got)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
	if err := n.FailOSPulls(0); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-os3-b"); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, n, "/etc/os3.conf"); got != "os3\n" {
		t.Errorf("file = %q", got)
	}
}

// OS 4: the boot falls back to the old deployment: NodeDegraded names the
// booted and the desired image, and the node is not rebooted again. A new
// desired config with the same image stages it again and converges.
func TestOSFallbackBoot(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// A's own kernel argument stays on the node through the fallback; C,
	// which replaces B, must remove it too.
	osConfig(t, "rendered-os4-a", ign(nil), osImageA, "old=a")
	osConfig(t, "rendered-os4-b", ign(nil), osImageB, "new=b")
	osConfig(t, "rendered-os4-c", ign(map[string]string{"/etc/os4.conf": "os4\n"}), osImageB, "new=c")
	n, log := osNode(t, "os4", "rendered-os4-a", rpmOstree(osImageA, "old=a"))
	if err := n.FallBackNextOSBoot(); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-os4-b"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	msg := log.Condition("NodeDegraded").Message
	for _, want := range []string{"booted OS image ostree-unverified-registry:" + osImageA, "desired " + osImageB,
		"fell back to the previous deployment", "Not rebooting again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("NodeDegraded message lacks %q: %q", want, msg)
		}
	}
	if c := log.Condition("RebootedNode"); c.Status != "Unknown" || !strings.HasPrefix(c.Message, "Error: ") {
		t.Errorf("RebootedNode %s %q", c.Status, c.Message)
	}
	// Retries check again; none reboots.
	for strings.Count(n.DaemonLog(), "the node booted the wrong OS deployment") < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("no retry of the failed check logged")
		case <-time.After(500 * time.Millisecond):
		}
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2 (no second reboot)", b)
	}
	if got := callsLike(t, n, "cleanup"); len(got) != 0 {
		t.Errorf("cleanup after a bad boot: %q", got)
	}
	if err := n.SetDesired(ctx, "rendered-os4-c"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-os4-c"); err != nil {
		t.Fatal(err)
	}
	if b := n.Sys.Boots(); b != 3 {
		t.Errorf("boots = %d, want 3", b)
	}
	if c := log.Condition("NodeDegraded"); c.Status != "False" {
		t.Errorf("NodeDegraded %s %q", c.Status, c.Message)
	}
	if got := len(callsLike(t, n, "rebase")); got != 1 {
		t.Errorf("%d rebases, want 1 (the pending deployment is reused)", got)
	}
	out, err := n.Sys.Exec(ctx, "rpm-ostree", "kargs")
	if err != nil || !regexp.MustCompile(`^rw root=LABEL=root new=c ostree=\S+$`).MatchString(strings.TrimSpace(string(out))) {
		t.Errorf("booted kernel arguments %q, %v; want the base ones and new=c", out, err)
	}
}

// OS 5, a node with no OS updater, is in osfields_test.go: it manages no OS field.

// bootc: the image is switched with bootc, the node boots it; kernel
// arguments are refused on a bootc host without rpm-ostree.
func TestBootcSwitch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	osConfig(t, "rendered-bc-a", ign(nil), osImageA)
	osConfig(t, "rendered-bc-b", ign(nil), osImageB)
	osConfig(t, "rendered-bc-c", ign(nil), osImageB, "nosmt")
	n, log := osNode(t, "bc", "rendered-bc-a", osfake.Options{Bootc: true, Image: "ostree-unverified-registry:" + osImageA, Kargs: baseKargs})
	if !strings.Contains(n.DaemonLog(), `"updater": "bootc"`) {
		t.Error("the daemon did not log bootc as its OS updater")
	}
	if err := n.SetDesired(ctx, "rendered-bc-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-bc-b"); err != nil {
		t.Fatal(err)
	}
	if got := callsLike(t, n, "switch", "cleanup"); strings.Join(got, "\n") != "bootc switch -- "+osImageB {
		t.Errorf("changing calls %q", got)
	}
	if c := log.Condition("RebootedNode"); !strings.Contains(c.Message, "booted OS image ostree-unverified-registry:"+osImageB) {
		t.Errorf("RebootedNode message %q", c.Message)
	}
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2", b)
	}
	if err := n.SetDesired(ctx, "rendered-bc-c"); err != nil {
		t.Fatal(err)
	}
	// Each retry of the refused update starts prepare again (UpdateCompatible
	// Unknown), so wait for the refusal itself rather than NodeDegraded.
	if err := log.WaitFor(ctx, "UpdateCompatible", "False", ""); err != nil {
		t.Fatal(err)
	}
	if c := log.Condition("UpdateCompatible"); !strings.Contains(c.Message, "this node's OS updater bootc cannot make the change: kernel argument changes on a bootc host need rpm-ostree") {
		t.Errorf("UpdateCompatible message %q", c.Message)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
}
