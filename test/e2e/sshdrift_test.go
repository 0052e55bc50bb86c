package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SSH keys are drift-checked like files: editing core's authorized_keys
// sets NodeDegraded=True naming it, and fixing an unrelated drifted file
// does not clear it while the keys still differ (the running monitor once
// checked files and units only, unlike validation).
func TestSSHKeyDrift(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDrift drift@example"
	path := "/etc/containers/registries.d/sshdrift.yaml"
	config(t, "rendered-sd-a", ign(nil))
	config(t, "rendered-sd-b", ign(map[string]string{path: "managed: true\n"},
		`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["`+key+`"]}]}`))
	n, log := node(t, "sd", "rendered-sd-a")
	if err := n.SetDesired(ctx, "rendered-sd-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-sd-b"); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(n.Sys.Root, "/home/core/.ssh/authorized_keys")
	file := filepath.Join(n.Sys.Root, path)
	write := func(p, data string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The keys alone drift.
	write(keys, key+"\nssh-ed25519 AAAAintruder intruder@example\n")
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatalf("SSH key drift not reported: %v", err)
	}
	if msg := log.Condition("NodeDegraded").Message; !strings.Contains(msg, "authorized_keys") || strings.Contains(msg, "intruder") {
		t.Errorf("NodeDegraded message %q should name authorized_keys and not show keys", msg)
	}
	// A file drifts too, and is fixed: the keys still differ.
	write(file, "edited by hand\n")
	for c := log.Condition("NodeDegraded"); !strings.Contains(c.Message, path); c = log.Condition("NodeDegraded") {
		select {
		case <-ctx.Done():
			t.Fatalf("file drift not reported: NodeDegraded %q", c.Message)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := os.WriteFile(file, []byte("managed: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the monitor settles 200 ms after a change
	if c := log.Condition("NodeDegraded"); c.Status != "True" || !strings.Contains(c.Message, "authorized_keys") {
		t.Errorf("after fixing the file, NodeDegraded = %s %q; the keys still differ", c.Status, c.Message)
	}
	// The keys fixed: healthy again.
	write(keys, key+"\n")
	if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
		t.Fatal(err)
	}
}
