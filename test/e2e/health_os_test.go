package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Health 4: with the OS fake, a bad OS image (the check command finds it
// booted) is rolled back through rpm-ostree's own rollback: the node boots
// the previous image again, and the rollback deployment the update kept is
// what it boots.
func TestHealthOSImageRollback(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const dir = "/etc/nodeconfd-hc4"
	osConfig(t, "rendered-hc4-a", ign(nil), osImageA)
	osConfig(t, "rendered-hc4-b", ign(map[string]string{dir + "/marker": "b\n"}), osImageB)
	const check = "/usr/local/libexec/hc4-check"
	n, log := healthNode(t, "hc4", "rendered-hc4-a", dir, testbed.NodeOptions{OS: ptr(rpmOstree(osImageA))},
		"--health-command", "/bin/sh "+check, "--health-timeout", "20s")
	// The administrator's check, on the node: it fails while image B is booted.
	script := "rpm-ostree status --booted --json | grep -q bbbbbbbbbbbb && exit 1\nexit 0\n"
	if err := os.MkdirAll(filepath.Join(n.Sys.Root, filepath.Dir(check)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.Sys.Root, check), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			calls, _ := n.OSCalls()
			t.Logf("OS tool calls:\n%s", strings.Join(calls, "\n"))
		}
	})
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-hc4-b"); err != nil {
		t.Fatal(err)
	}
	st, err := waitRolledBack(ctx, log, from, "rendered-hc4-b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Conditions {
		if c.Type == "HealthChecked" {
			t.Logf("HealthChecked: %s", c.Message)
			if !strings.Contains(c.Message, "Queued the previous OS deployment with rpm-ostree rollback") {
				t.Errorf("HealthChecked message %q", c.Message)
			}
		}
	}
	boots, err := n.OSBoots()
	want := "ostree-unverified-registry:" + osImageA + " ostree-unverified-registry:" + osImageB + " ostree-unverified-registry:" + osImageA
	if err != nil || strings.Join(boots, " ") != want {
		t.Errorf("booted images %q, %v; want %s", boots, err, want)
	}
	wantCalls := []string{"rpm-ostree rebase --experimental -- ostree-unverified-registry:" + osImageB, "rpm-ostree rollback"}
	if got := callsLike(t, n, "rebase", "rollback", "cleanup"); strings.Join(got, "\n") != strings.Join(wantCalls, "\n") {
		t.Errorf("changing calls:\n got %q\nwant %q", got, wantCalls)
	}
	wantHeld(t, log, "hc4", "rendered-hc4-a", "rendered-hc4-b")
	if _, err := os.Stat(filepath.Join(n.Sys.Root, dir, "marker")); err == nil {
		t.Error("the failed config's file is still there")
	}
}

func ptr[T any](v T) *T { return &v }

// Health 5: SIGKILL during the gate, then during the rollback's write, then
// once the rollback is recorded over but before its status is written: each
// time the restarted daemon converges on the rolled-back, held node, and its
// status says so.
func TestHealthKilled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const dir = "/etc/nodeconfd-hc5"
	config(t, "rendered-hc5-a", ign(map[string]string{dir + "/conf": "good\n"}))
	config(t, "rendered-hc5-b", ign(map[string]string{dir + "/conf": "bad\n", dir + "/broken": "b\n"}))
	config(t, "rendered-hc5-c", ign(map[string]string{dir + "/conf": "worse\n", dir + "/broken": "c\n"}))
	config(t, "rendered-hc5-d", ign(map[string]string{dir + "/conf": "worst\n", dir + "/broken": "d\n"}))
	n, log := healthNode(t, "hc5", "rendered-hc5-a", dir, testbed.NodeOptions{},
		"--health-command", "/usr/bin/test ! -e "+dir+"/broken", "--health-timeout", "15s")
	for _, round := range []struct{ config, point string }{
		{"rendered-hc5-b", "start:health"},
		// The forward write renames 2 files into place; the 3rd is the rollback's.
		{"rendered-hc5-c", "file-written:3"},
		// The health step returned: Kept saved, the status not yet written.
		{"rendered-hc5-d", "ran:health"},
	} {
		t.Logf("round %s, killed at %s", round.config, round.point)
		from := log.Len()
		if err := killDuring(ctx, n, round.config, round.point); err != nil {
			t.Fatal(err)
		}
		if err := n.ResumeDaemon(); err != nil {
			t.Fatal(err)
		}
		if _, err := waitRolledBack(ctx, log, from, round.config); err != nil {
			t.Fatal(err)
		}
		if got := readNodeFile(t, n, dir+"/conf"); got != "good\n" {
			t.Errorf("after the rollback %s/conf = %q", dir, got)
		}
		if _, err := os.Stat(filepath.Join(n.Sys.Root, dir, "broken")); err == nil {
			t.Error("the file the failed config added is still there")
		}
		wantHeld(t, log, "hc5", "rendered-hc5-a", round.config)
		if entries, _ := os.ReadDir(filepath.Join(n.Sys.Root, "var/lib/nodeconfd/txn")); len(entries) > 0 {
			t.Errorf("journals left: %v", entries)
		}
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
}
