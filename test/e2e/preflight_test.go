package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Core swaps its ~/.ssh for a symlink to ../../etc: the SSH keys update is
// refused in prepare naming the field, before the cordon (the config also
// needs a reboot), and /etc keeps its owner and mode, with no
// /etc/authorized_keys. Then a file with a 255-byte basename is written
// and validated.
func TestPreflightOnNode(t *testing.T) {
	t.Parallel()
	long := "/etc/nodeconfd-long/" + strings.Repeat("n", 255)
	n, log := nodeWithPolicy(t, "pf", "rendered-pf-base", "nodeDisruptionPolicy:\n  files:\n  - path: /etc/nodeconfd-long/\n    actions: [{type: None}]\n")
	config(t, "rendered-pf-base", ign(nil))
	const field = "spec.config.passwd.users[0].sshAuthorizedKeys"
	canary := "/etc/nodeconfd-canary/rendered-pf-ssh"
	config(t, "rendered-pf-ssh", ign(map[string]string{canary: "canary"},
		`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPreflight pf@example"]}]}`))
	config(t, "rendered-pf-long", ign(map[string]string{long: "long name\n"}))

	root := n.Sys.Root
	ssh := filepath.Join(root, "home/core/.ssh")
	if err := os.RemoveAll(ssh); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../etc", ssh); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(ssh, 1000, 1000); err != nil { // as core made it
		t.Fatal(err)
	}
	etcBefore := statOf(t, filepath.Join(root, "etc"))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := n.SetDesired(ctx, "rendered-pf-ssh"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	c := log.Condition("UpdateCompatible")
	if c.Status != "False" || !strings.Contains(c.Message, `"rendered-pf-ssh"`) || !strings.Contains(c.Message, field) ||
		!strings.Contains(c.Message, "symlink") {
		t.Errorf("UpdateCompatible = %s %q, want False naming rendered-pf-ssh, %s and the symlink", c.Status, c.Message, field)
	}
	nd := getNode(t, "pf")
	if st := nd.Annotations["machineconfiguration.openshift.io/state"]; st != "Degraded" {
		t.Errorf("state annotation %q, want Degraded", st)
	}
	if nd.Spec.Unschedulable || nd.Annotations["machineconfiguration.openshift.io/cordonedBy"] != "" {
		t.Error("the node was cordoned")
	}
	for _, cond := range []string{"Cordoned", "AppliedFilesAndOS"} {
		if c := log.Condition(cond); c != nil && c.Status != "False" {
			t.Errorf("%s = %s %q: the update went past prepare", cond, c.Status, c.Message)
		}
	}
	if got := statOf(t, filepath.Join(root, "etc")); got != etcBefore {
		t.Errorf("/etc is %+v, was %+v", got, etcBefore)
	}
	for _, p := range []string{"etc/authorized_keys", strings.TrimPrefix(canary, "/")} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("/%s was written", p)
		}
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}

	// Core's folder put back, the node recovers on its base config.
	if err := os.Remove(ssh); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ssh, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := n.SetDesired(ctx, "rendered-pf-base"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-pf-base"); err != nil {
		t.Fatal(err)
	}

	// A 255-byte basename (NAME_MAX) is written and validated.
	if err := n.SetDesired(ctx, "rendered-pf-long"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-pf-long"); err != nil {
		t.Fatal(err)
	}
	if got := readNodeFile(t, n, long); got != "long name\n" {
		t.Errorf("%s holds %q", long, got)
	}
	entries, err := os.ReadDir(filepath.Join(root, "etc/nodeconfd-long"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("/etc/nodeconfd-long holds %d entries, want the file alone", len(entries))
	}
}

// dirStat is a folder's owner and mode.
type dirStat struct{ UID, GID, Mode uint32 }

func statOf(t *testing.T, p string) dirStat {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return dirStat{st.Uid, st.Gid, st.Mode}
}
