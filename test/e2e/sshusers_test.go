package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// A node whose admin user is not core (a Debian node's): the node's own
// useradd makes debadmin, who has a key of her own. A config with keys for core and
// debadmin writes both, each user's and 0600 in a 0700 .ssh; her keys are
// drift-checked; a config without her keys gives her own file back and
// leaves core's; and when she points her ~/.ssh at /etc, a config with her
// keys is refused in prepare naming her entry, /etc untouched.
func TestSSHKeysOfAnotherUserOnNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const (
		coreKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAISuCore core@example"
		ownKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAISuOwn debadmin@laptop"
		d1, d2  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAISuD1 d1@example", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAISuD2 d2@example"
		uid     = 1601
	)
	users := func(entries ...string) string { return `"passwd":{"users":[` + strings.Join(entries, ",") + `]}` }
	user := func(name string, keys ...string) string {
		return fmt.Sprintf(`{"name":%q,"sshAuthorizedKeys":["%s"]}`, name, strings.Join(keys, `","`))
	}
	config(t, "rendered-su-a", ign(nil))
	config(t, "rendered-su-b", ign(nil, users(user("core", coreKey), user("debadmin", d1, d2))))
	config(t, "rendered-su-c", ign(nil, users(user("core", coreKey))))
	config(t, "rendered-su-d", ign(map[string]string{"/etc/nodeconfd-canary/rendered-su-d": "canary"},
		users(user("core", coreKey), user("debadmin", d1))))
	n, log := node(t, "su", "rendered-su-a")
	root := n.Sys.Root

	sshDir, keys := addDebadmin(ctx, t, n, uid, ownKey)
	own := entryOf(t, keys)

	// Both users' keys.
	if err := n.SetDesired(ctx, "rendered-su-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-su-b"); err != nil {
		t.Fatal(err)
	}
	if c := log.Condition("UpdatePostActionComplete"); c.Reason != "None" {
		t.Errorf("UpdatePostActionComplete reason %q, want None", c.Reason)
	}
	wantEntry(t, keys, entry{kind: "file", data: d1 + "\n" + d2 + "\n", perm: 0o600, uid: uid, gid: uid})
	wantEntry(t, sshDir, entry{kind: "dir", perm: 0o700, uid: uid, gid: uid})
	coreKeys := filepath.Join(root, "home/core/.ssh/authorized_keys")
	wantEntry(t, coreKeys, entry{kind: "file", data: coreKey + "\n", perm: 0o600, uid: 1000, gid: 1000})

	// Her keys drift like core's.
	keyDrift(ctx, t, log, keys, d1+"\n", d1+"\n"+d2+"\n")

	// Her keys removed: her own file is back, core's stay.
	if err := n.SetDesired(ctx, "rendered-su-c"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-su-c"); err != nil {
		t.Fatal(err)
	}
	wantEntry(t, keys, own)
	wantEntry(t, coreKeys, entry{kind: "file", data: coreKey + "\n", perm: 0o600, uid: 1000, gid: 1000})

	// She points her .ssh at /etc: refused before anything is touched.
	refusedThroughSymlink(ctx, t, n, log, sshDir, uid)
	wantEntry(t, coreKeys, entry{kind: "file", data: coreKey + "\n", perm: 0o600, uid: 1000, gid: 1000})
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
}

// keyDrift edits the key file at keys (host path) to drifted: the node
// reports the drift naming the file and no key, and is healthy again once
// the file is back to fixed.
func keyDrift(ctx context.Context, t *testing.T, log *testbed.StatusLog, keys, drifted, fixed string) {
	t.Helper()
	if err := os.WriteFile(keys, []byte(drifted), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatalf("drift of debadmin's keys not reported: %v", err)
	}
	if msg := log.Condition("NodeDegraded").Message; !strings.Contains(msg, "/home/debadmin/.ssh/authorized_keys") || strings.Contains(msg, "AAAA") {
		t.Errorf("NodeDegraded message %q should name her key file and show no key", msg)
	}
	if err := os.WriteFile(keys, []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
		t.Fatal(err)
	}
}

// refusedThroughSymlink replaces debadmin's .ssh (host path sshDir) with a
// symlink to ../../etc that she owns, and asks for rendered-su-d, which
// gives her keys: prepare refuses it naming her entry and the symlink,
// with no cordon, /etc untouched and nothing written.
func refusedThroughSymlink(ctx context.Context, t *testing.T, n *testbed.Node, log *testbed.StatusLog, sshDir string, uid int) {
	t.Helper()
	root := n.Sys.Root
	if err := os.RemoveAll(sshDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../etc", sshDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(sshDir, uid, uid); err != nil {
		t.Fatal(err)
	}
	etcBefore := statOf(t, filepath.Join(root, "etc"))
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-su-d"); err != nil {
		t.Fatal(err)
	}
	// The refusal as it was written: the update is retried (1 s on this
	// bed), and each retry's prepare sets UpdateCompatible Unknown again.
	const field = "spec.config.passwd.users[1].sshAuthorizedKeys"
	st, err := log.WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "NodeDegraded")
		return c != nil && c.Status == "True" && strings.Contains(c.Message, "rendered-su-d")
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := testbed.Find(st, "UpdateCompatible"); c.Status != "False" || !strings.Contains(c.Message, `"rendered-su-d"`) ||
		!strings.Contains(c.Message, field) || !strings.Contains(c.Message, "/home/debadmin/.ssh is a symlink") {
		t.Errorf("UpdateCompatible = %s %q, want False naming rendered-su-d, %s and the symlink", c.Status, c.Message, field)
	}
	if nd := getNode(t, "su"); nd.Spec.Unschedulable {
		t.Error("the node was cordoned")
	}
	if got := statOf(t, filepath.Join(root, "etc")); got != etcBefore {
		t.Errorf("/etc is %+v, was %+v", got, etcBefore)
	}
	for _, p := range []string{"etc/authorized_keys", "etc/nodeconfd-canary/rendered-su-d"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("/%s was written", p)
		}
	}
}

// addDebadmin makes user debadmin (uid = gid) with the node's own useradd,
// with ownKey in an authorized_keys of her own (0644 in a 0755 .ssh), and
// returns the host paths of her .ssh and key file.
func addDebadmin(ctx context.Context, t *testing.T, n *testbed.Node, uid int, ownKey string) (sshDir, keys string) {
	t.Helper()
	if _, err := n.Sys.Exec(ctx, "useradd", "--uid", fmt.Sprint(uid), "--user-group", "--create-home",
		"--home-dir", "/home/debadmin", "--shell", "/bin/bash", "debadmin"); err != nil {
		t.Fatal(err)
	}
	sshDir, keys = filepath.Join(n.Sys.Root, "home/debadmin/.ssh"), filepath.Join(n.Sys.Root, "home/debadmin/.ssh/authorized_keys")
	for _, step := range []error{os.Mkdir(sshDir, 0o755), os.WriteFile(keys, []byte(ownKey+"\n"), 0o644),
		os.Chown(sshDir, uid, uid), os.Chown(keys, uid, uid)} {
		if step != nil {
			t.Fatal(step)
		}
	}
	return sshDir, keys
}

// The daemon is SIGKILLed in the write of debadmin's keys (her key file
// renamed into place, core's before it, nothing committed), then in the
// write that removes them (done, not yet recorded): each restart resumes
// the update from its journal and ends on the config, her own key file
// back after the removal, no journal or temporary file left.
func TestSSHKeysOfAnotherUserCrash(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const (
		coreKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIScCore core@example"
		ownKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIScOwn debadmin@laptop"
		key     = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIScD1 d1@example"
		uid     = 1602
	)
	config(t, "rendered-sc-a", ign(nil))
	config(t, "rendered-sc-b", ign(nil, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["`+coreKey+`"]},`+
		`{"name":"debadmin","sshAuthorizedKeys":["`+key+`"]}]}`))
	config(t, "rendered-sc-c", ign(nil, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["`+coreKey+`"]}]}`))
	n, log := node(t, "sc", "rendered-sc-a")
	sshDir, keys := addDebadmin(ctx, t, n, uid, ownKey)
	own := entryOf(t, keys)
	for _, round := range []struct{ config, point string }{
		{"rendered-sc-b", "file-written:2"}, // core's keys are file 1
		{"rendered-sc-c", "ran:write"},
	} {
		if err := n.StopDaemon(); err != nil {
			t.Fatal(err)
		}
		killed := n.ArmKill(round.point)
		if err := n.SetDesired(ctx, round.config); err != nil {
			t.Fatal(err)
		}
		if err := n.StartDaemon(); err != nil {
			t.Fatal(err)
		}
		if err := n.WaitKilled(ctx, killed); err != nil {
			t.Fatal(err)
		}
		if err := n.ResumeDaemon(); err != nil {
			t.Fatal(err)
		}
		if err := waitCurrent(ctx, log, round.config); err != nil {
			t.Fatal(err)
		}
		if c := log.Condition("NodeDegraded"); c == nil || c.Status != "False" {
			t.Errorf("%s: NodeDegraded = %+v", round.point, c)
		}
		if round.config == "rendered-sc-b" {
			wantEntry(t, keys, entry{kind: "file", data: key + "\n", perm: 0o600, uid: uid, gid: uid})
			wantEntry(t, sshDir, entry{kind: "dir", perm: 0o700, uid: uid, gid: uid})
		} else {
			wantEntry(t, keys, own)
		}
		wantEntry(t, filepath.Join(n.Sys.Root, "home/core/.ssh/authorized_keys"),
			entry{kind: "file", data: coreKey + "\n", perm: 0o600, uid: 1000, gid: 1000})
		for _, dir := range []string{sshDir, filepath.Join(n.Sys.Root, "home/core/.ssh"), filepath.Join(n.Sys.Root, "var/lib/nodeconfd/txn")} {
			names, err := os.ReadDir(dir)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			for _, e := range names {
				if e.Name() != "authorized_keys" {
					t.Errorf("%s: %s left in %s", round.point, e.Name(), dir)
				}
			}
		}
	}
}

// entry is what a node path holds, for comparisons.
type entry struct {
	kind     string
	data     string
	perm     uint32
	uid, gid int
}

func entryOf(t *testing.T, p string) entry {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	e := entry{perm: st.Mode & 0o7777, uid: int(st.Uid), gid: int(st.Gid)}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		e.kind = "dir"
	case syscall.S_IFREG:
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		e.kind, e.data = "file", string(data)
	default:
		e.kind = fmt.Sprintf("mode %o", st.Mode&syscall.S_IFMT)
	}
	return e
}

func wantEntry(t *testing.T, p string, want entry) {
	t.Helper()
	if got := entryOf(t, p); got != want {
		t.Errorf("%s is %+v, want %+v", p, got, want)
	}
}
