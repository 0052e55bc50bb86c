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
		"rpm-ostree rebase --experimental ostree-unverified-registry:" + newImage,
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
	if _, err := u.Stage(ctx, phases.OSChange{Image: newImage}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools.root, osfake.FallbackFile), nil, 0o644); err != nil {
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
}

func TestBootc(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{Bootc: true, Image: "ostree-unverified-registry:" + oldImage, Kargs: []string{"rw"}})
	u, err := Detect(ctx, tools.root, tools, fastRetry)
	if err != nil || Name(u) != "bootc" {
		t.Fatalf("Detect = %v, %v", Name(u), err)
	}
	if err := u.Supports("", true); err == nil || !strings.Contains(err.Error(), "need rpm-ostree") {
		t.Errorf("Supports(kargs) = %v", err)
	}
	if err := u.Supports(newImage, false); err != nil {
		t.Errorf("Supports(image) = %v", err)
	}
	if err := u.Supports("ostree-remote-registry:fedora:"+newImage, false); err == nil || !strings.Contains(err.Error(), "cannot verify images with an ostree remote") {
		t.Errorf("Supports(remote-verified image) = %v", err)
	}
	msg, err := u.Stage(ctx, phases.OSChange{Image: newImage})
	if err != nil || msg != "Staged OS image "+newImage {
		t.Fatalf("Stage = %q, %v", msg, err)
	}
	if got := tools.calls(t, 0); !reflect.DeepEqual(got, []string{"bootc status --json", "bootc status --json", "bootc switch " + newImage}) {
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
