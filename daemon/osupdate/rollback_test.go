package osupdate

import (
	"context"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/test/testbed/osfake"
)

// A booted update rolled back with rpm-ostree rollback: the previous
// deployment boots next, a second Rollback does not swap back, and the boot
// brings up the previous image and kernel arguments.
func TestRpmOstreeRollback(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{RpmOstree: true, Image: "ostree-unverified-registry:" + oldImage, Kargs: []string{"rw"}})
	u := &RpmOstree{Run: tools, Retry: fastRetry}
	if _, err := u.Rollback(ctx, phases.OSTarget{Image: oldImage}); err == nil || !strings.Contains(err.Error(), "No rollback deployment found") {
		t.Errorf("Rollback with one deployment = %v", err)
	}
	if _, err := u.Stage(ctx, phases.OSChange{Image: newImage, KernelArgs: []string{"rw", "bad"}, Added: []string{"bad"}}); err != nil {
		t.Fatal(err)
	}
	tools.boot(t)
	target := phases.OSTarget{Image: oldImage, KernelArgs: []string{"rw"}}
	msg, err := u.Rollback(ctx, target)
	if err != nil || msg != "Queued the previous OS deployment with rpm-ostree rollback" {
		t.Fatalf("Rollback = %q, %v", msg, err)
	}
	n := len(tools.calls(t, 0))
	if msg, err := u.Rollback(ctx, target); err != nil || !strings.Contains(msg, "already") {
		t.Errorf("second Rollback = %q, %v", msg, err)
	}
	for _, c := range tools.calls(t, n) {
		if c == "rpm-ostree rollback" {
			t.Error("second Rollback ran rpm-ostree rollback again")
		}
	}
	tools.boot(t)
	b, err := u.Booted(ctx, oldImage)
	if err != nil || !b.IsImage || strings.Join(b.KernelArgs, " ") != "rw" {
		t.Errorf("Booted after the rollback's boot = %+v, %v", b, err)
	}
}

func TestBootcRollback(t *testing.T) {
	ctx := context.Background()
	tools := newNode(t, osfake.Options{Bootc: true, Image: "ostree-unverified-registry:" + oldImage})
	u := &Bootc{Run: tools, Retry: fastRetry}
	if _, err := u.Stage(ctx, phases.OSChange{Image: newImage}); err != nil {
		t.Fatal(err)
	}
	tools.boot(t)
	msg, err := u.Rollback(ctx, phases.OSTarget{Image: oldImage})
	if err != nil || msg != "Queued the previous OS deployment with bootc rollback" {
		t.Fatalf("Rollback = %q, %v", msg, err)
	}
	if msg, err := u.Rollback(ctx, phases.OSTarget{Image: oldImage}); err != nil || !strings.Contains(msg, "already") {
		t.Errorf("second Rollback = %q, %v", msg, err)
	}
	tools.boot(t)
	if b, err := u.Booted(ctx, oldImage); err != nil || !b.IsImage {
		t.Errorf("Booted after the rollback's boot = %+v, %v", b, err)
	}
}
