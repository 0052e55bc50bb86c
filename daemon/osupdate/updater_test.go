package osupdate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

// fakeTools runs the test bed's fake rpm-ostree and bootc in-process
// against a root folder, as the chroot runner runs the real ones.
type fakeTools struct{ root string }

func (f fakeTools) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	if !f.Has(name) {
		return nil, fmt.Errorf("%s is not installed on the node", name)
	}
	var stdout, stderr bytes.Buffer
	if code := osfake.Main(f.root, append([]string{name}, args...), &stdout, &stderr); code != 0 {
		return stdout.Bytes(), &CommandError{Command: commandLine(name, args), Err: fmt.Errorf("exit status %d", code), Stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

func (f fakeTools) Has(name string) bool {
	_, err := os.Lstat(filepath.Join(f.root, "usr/bin", name))
	return err == nil
}

func (f fakeTools) boot(t *testing.T) {
	t.Helper()
	var out bytes.Buffer
	if code := osfake.Main(f.root, []string{osfake.Binary, "boot"}, &out, &out); code != 0 {
		t.Fatalf("boot: %s", out.String())
	}
}

// calls returns the logged invocations after the first skip.
func (f fakeTools) calls(t *testing.T, skip int) []string {
	t.Helper()
	fh, err := os.Open(filepath.Join(f.root, osfake.InvocationsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var args []string
		if err := json.Unmarshal(sc.Bytes(), &args); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Join(args, " "))
	}
	if skip > len(out) {
		return nil
	}
	return out[skip:]
}

func newNode(t *testing.T, opts osfake.Options) fakeTools {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"usr/bin", "run", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := osfake.Install(root, os.Args[0], opts); err != nil {
		t.Fatal(err)
	}
	return fakeTools{root: root}
}

var fastRetry = Retry{Attempts: 3, Initial: time.Millisecond, Max: 2 * time.Millisecond}

const (
	oldImage = "quay.io/os@sha256:1111"
	newImage = "quay.io/os@sha256:2222"
)

func TestRpmOstreeStageBootCleanup(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage, Kargs: []string{"rw", "b", "c=1"}})
	u, err := Detect(ctx, tools.root, tools, fastRetry)
	if err != nil || Name(u) != "rpm-ostree" {
		t.Fatalf("Detect = %v, %v", Name(u), err)
	}
	msg, err := u.Stage(ctx, phases.OSChange{Image: newImage, KernelArgs: []string{"c=1", "a", "a"}, Removed: []string{"b"}, Added: []string{"a", "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if msg != "Staged OS image "+newImage+"; kernel arguments +a +a -b" {
		t.Errorf("Stage message %q", msg)
	}
	want := []string{
		"rpm-ostree status --json",
		"rpm-ostree rebase --experimental -- ostree-unverified-registry:" + newImage,
		"rpm-ostree status --json",
		"rpm-ostree kargs --deploy-index=1", "rpm-ostree kargs --deploy-index=0",
		"rpm-ostree kargs --delete-if-present=b --append=a --append=a",
	}
	if got := tools.calls(t, 0); !reflect.DeepEqual(got, want) {
		t.Errorf("calls:\n got %q\nwant %q", got, want)
	}
	// A resumed write stages nothing twice.
	n := len(tools.calls(t, 0))
	msg, err = u.Stage(ctx, phases.OSChange{Image: newImage, KernelArgs: []string{"c=1", "a", "a"}, Removed: []string{"b"}, Added: []string{"a", "a"}})
	if err != nil || !strings.Contains(msg, "OS image "+newImage+" already staged") || !strings.Contains(msg, "+a +a -b already staged") {
		t.Errorf("second Stage = %q, %v", msg, err)
	}
	for _, c := range tools.calls(t, n) {
		if strings.Contains(c, "rebase") || strings.Contains(c, "--append") {
			t.Errorf("second Stage ran %q", c)
		}
	}
	// Staged is not booted until the node boots.
	b, err := u.Booted(ctx, newImage)
	if err != nil || b.IsImage || b.Image != "ostree-unverified-registry:"+oldImage {
		t.Errorf("Booted before the boot = %+v, %v", b, err)
	}
	tools.boot(t)
	b, err = u.Booted(ctx, newImage)
	if err != nil || !b.IsImage || !reflect.DeepEqual(b.KernelArgs, []string{"rw", "c=1", "a", "a"}) {
		t.Errorf("Booted after the boot = %+v, %v", b, err)
	}
	if _, err := u.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := rpmOstreeStatus(ctx, tools)
	if err != nil || len(st.Deployments) != 1 || !st.Deployments[0].Booted {
		t.Errorf("after cleanup: %+v, %v", st, err)
	}
}

func TestRpmOstreePullRetry(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage})
	u := &RpmOstree{Run: tools, Retry: fastRetry}
	failPulls := func(n int) {
		if err := os.WriteFile(filepath.Join(tools.root, osfake.FailPullsFile), []byte(fmt.Sprint(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	failPulls(2)
	if _, err := u.Stage(ctx, phases.OSChange{Image: newImage}); err != nil {
		t.Errorf("two failed pulls then one good: %v", err)
	}
	failPulls(3)
	_, err := u.Stage(ctx, phases.OSChange{Image: "quay.io/os@sha256:3333"})
	if err == nil || !strings.Contains(err.Error(), "pinging container registry quay.io") || !strings.Contains(err.Error(), "(failed 3 times)") ||
		!strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("three failed pulls: %v", err)
	}
	rebases := 0
	for _, c := range tools.calls(t, 0) {
		if strings.HasPrefix(c, "rpm-ostree rebase") {
			rebases++
		}
	}
	if rebases != 6 {
		t.Errorf("%d rebase calls, want 6", rebases)
	}
}

func TestRpmOstreeFallbackBoot(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage})
	u := &RpmOstree{Run: tools, Retry: fastRetry}
	if err := os.WriteFile(filepath.Join(tools.root, osfake.FallbackFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The switch waits for the boot that finalizes a staged deployment.
	tools.boot(t)
	if _, err := os.Stat(filepath.Join(tools.root, osfake.FallbackFile)); err != nil {
		t.Errorf("a boot with nothing staged used the fallback switch: %v", err)
	}
	if _, err := u.Stage(ctx, phases.OSChange{Image: newImage}); err != nil {
		t.Fatal(err)
	}
	tools.boot(t)
	b, err := u.Booted(ctx, newImage)
	if err != nil || b.IsImage || b.Image != "ostree-unverified-registry:"+oldImage {
		t.Errorf("Booted after a fallback = %+v, %v", b, err)
	}
	// The new deployment is still pending: staging it again does nothing.
	if msg, err := u.Stage(ctx, phases.OSChange{Image: newImage}); err != nil || !strings.Contains(msg, "already staged") {
		t.Errorf("Stage after the fallback = %q, %v", msg, err)
	}
	// A later boot, finalizing nothing, boots the default entry: the
	// pending deployment (as GRUB would after a one-time manual fallback).
	if err := os.WriteFile(filepath.Join(tools.root, osfake.FallbackFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tools.boot(t)
	if b, err := u.Booted(ctx, newImage); err != nil || !b.IsImage {
		t.Errorf("Booted after a later boot = %+v, %v", b, err)
	}
}

func TestBootc(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{Bootc: true, Image: "ostree-unverified-registry:" + oldImage, Kargs: []string{"rw"}})
	u, err := Detect(ctx, tools.root, tools, fastRetry)
	if err != nil || Name(u) != "bootc" {
		t.Fatalf("Detect = %v, %v", Name(u), err)
	}
	if err := u.Supports(phases.OSChange{Added: []string{"a"}}); err == nil || !strings.Contains(err.Error(), "need rpm-ostree") {
		t.Errorf("Supports(kargs) = %v", err)
	}
	if err := u.Supports(phases.OSChange{Image: newImage}); err != nil {
		t.Errorf("Supports(image) = %v", err)
	}
	if err := u.Supports(phases.OSChange{Image: "ostree-remote-registry:fedora:" + newImage}); err == nil || !strings.Contains(err.Error(), "cannot verify images with an ostree remote") {
		t.Errorf("Supports(remote-verified image) = %v", err)
	}
	msg, err := u.Stage(ctx, phases.OSChange{Image: newImage})
	if err != nil || msg != "Staged OS image "+newImage {
		t.Fatalf("Stage = %q, %v", msg, err)
	}
	if got := tools.calls(t, 0); !reflect.DeepEqual(got, []string{"bootc status --json", "bootc status --json", "bootc switch -- " + newImage}) {
		t.Errorf("calls %q", got)
	}
	if b, err := u.Booted(ctx, newImage); err != nil || b.IsImage || b.KernelArgs != nil {
		t.Errorf("Booted before the boot = %+v, %v", b, err)
	}
	tools.boot(t)
	if b, err := u.Booted(ctx, newImage); err != nil || !b.IsImage {
		t.Errorf("Booted after the boot = %+v, %v", b, err)
	}
}

func TestDetectNone(t *testing.T) {
	root := t.TempDir()
	u, err := Detect(context.Background(), root, fakeTools{root: root}, fastRetry)
	if err != nil || u != nil || Name(u) != "none" {
		t.Errorf("Detect on a plain root = %v, %v", u, err)
	}
}

// A kargs failure after a good rebase leaves a staged deployment; Unstage
// removes it (rpm-ostree cleanup -p), and does nothing when none is pending.
func TestRpmOstreeUnstage(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage, Kargs: []string{"rw", "c=1", "c=2"}})
	u := &RpmOstree{Run: tools, Retry: fastRetry}
	_, err := u.Stage(ctx, phases.OSChange{Image: newImage, KernelArgs: []string{"x"}, Removed: []string{"c"}, Added: []string{"x"}})
	if err == nil || !strings.Contains(err.Error(), "Multiple values for key 'c' found") {
		t.Fatalf("Stage removing c from c=1 c=2: %v", err)
	}
	msg, err := u.Unstage(ctx)
	if err != nil || msg != "removed the pending deployment ostree-unverified-registry:"+newImage {
		t.Errorf("Unstage = %q, %v", msg, err)
	}
	if st, err := rpmOstreeStatus(ctx, tools); err != nil || len(st.Deployments) != 1 {
		t.Errorf("after Unstage: %+v, %v", st, err)
	}
	n := len(tools.calls(t, 0))
	if msg, err := u.Unstage(ctx); err != nil || msg != "" || len(tools.calls(t, n)) != 1 {
		t.Errorf("Unstage with nothing pending = %q, %v, calls %q", msg, err, tools.calls(t, n))
	}
}

// A reboot between Stage and the write being recorded finalizes the staged
// deployment; the write runs again and stages nothing twice.
func TestRpmOstreeRestageAfterReboot(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage, Kargs: []string{"rw"}})
	u := &RpmOstree{Run: tools, Retry: fastRetry}
	c := phases.OSChange{Image: newImage, KernelArgs: []string{"x", "x"}, Added: []string{"x", "x"}}
	if _, err := u.Stage(ctx, c); err != nil {
		t.Fatal(err)
	}
	tools.boot(t)
	n := len(tools.calls(t, 0))
	msg, err := u.Stage(ctx, c)
	if err != nil || msg != "OS image "+newImage+" already booted; kernel arguments +x +x already booted" {
		t.Errorf("Stage after the reboot = %q, %v", msg, err)
	}
	for _, call := range tools.calls(t, n) {
		if strings.Contains(call, "rebase") || strings.Contains(call, "--append") {
			t.Errorf("Stage after the reboot ran %q", call)
		}
	}
	if b, err := u.Booted(ctx, newImage); err != nil || !reflect.DeepEqual(b.KernelArgs, []string{"rw", "x", "x"}) {
		t.Errorf("Booted = %+v, %v", b, err)
	}
}

// After a fallback the pending deployment has the failed update's kernel
// arguments; a new change relative to the booted ones edits the pending one
// into the goal.
func TestRpmOstreeKargsOverFallback(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage, Kargs: []string{"rw", "a"}})
	u := &RpmOstree{Run: tools, Retry: fastRetry}
	if _, err := u.Stage(ctx, phases.OSChange{KernelArgs: []string{"b"}, Removed: []string{"a"}, Added: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools.root, osfake.FallbackFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tools.boot(t)
	// Booted: rw a; pending: rw b. Desired now: c (from a).
	n := len(tools.calls(t, 0))
	if _, err := u.Stage(ctx, phases.OSChange{KernelArgs: []string{"c"}, Removed: []string{"a"}, Added: []string{"c"}}); err != nil {
		t.Fatal(err)
	}
	calls := tools.calls(t, n)
	if last := calls[len(calls)-1]; last != "rpm-ostree kargs --delete-if-present=b --append=c" {
		t.Errorf("kargs call %q", last)
	}
	out, err := tools.Run(ctx, "rpm-ostree", "kargs", "--deploy-index=0")
	if err != nil || strings.TrimSpace(string(out)) != "rw c" {
		t.Errorf("pending kernel arguments %q, %v", out, err)
	}
}

// The fake's kargs as ostree's: --delete-if-present of a key with another
// value fails; ostree= names finalized deployments.
func TestFakeKargs(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage, Kargs: []string{"rw", "a=2", "c=1", "c=2"}})
	for _, tt := range []struct{ arg, err string }{
		{"a=1", "No karg 'a=1' found"},
		{"c", "Multiple values for key 'c' found"},
		{"c=3", "No karg 'c=3' found"},
	} {
		if _, err := tools.Run(ctx, "rpm-ostree", "kargs", "--delete-if-present="+tt.arg); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("--delete-if-present=%s: %v, want %q", tt.arg, err, tt.err)
		}
	}
	if _, err := tools.Run(ctx, "rpm-ostree", "kargs", "--delete-if-present=nosmt", "--delete-if-present=a", "--delete-if-present=c=2"); err != nil {
		t.Errorf("absent key, single value by key, one value by key=value: %v", err)
	}
	out, err := tools.Run(ctx, "rpm-ostree", "kargs", "--deploy-index=1")
	if err != nil || !regexp.MustCompile(`^rw a=2 c=1 c=2 ostree=/ostree/boot.1/fedora-coreos/[0-9a-f]{64}/0\n$`).Match(out) {
		t.Errorf("booted kargs %q, %v", out, err)
	}
	if out, err := tools.Run(ctx, "rpm-ostree", "kargs", "--deploy-index=0"); err != nil || string(out) != "rw c=1\n" {
		t.Errorf("staged kargs %q, %v", out, err)
	}
}
