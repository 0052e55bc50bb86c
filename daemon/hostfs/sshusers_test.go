package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// usersNode is a node with core and a Debian-style admin user, alice
// (1001, /home/alice), whose home she owns, plus users for the refusals:
// bob shares root's home, nohome's home is missing, tmpfs's is in /run.
func usersNode(t *testing.T) (string, *FS) {
	node, f := newNode(t)
	put(t, node, "etc/passwd", passwd+
		"alice:x:1001:1001::/home/alice:/bin/bash\n"+
		"bob:x:1002:1002::/root:/bin/bash\n"+
		"nohome:x:1003:1003::/home/nohome:/bin/bash\n"+
		"tmpfs:x:1004:1004::/run/tmpfs:/bin/bash\n"+
		"relhome:x:1005:1005::home/rel:/bin/bash\n", 0o644)
	mkdir(t, node, "var/home/core", 0o700, 1000)
	mkdir(t, node, "home/alice", 0o750, 1001)
	mkdir(t, node, "root", 0o700, 0)
	mkdir(t, node, "run/tmpfs", 0o700, 1004)
	return node, f
}

func keysOf(user string, i int, keys ...string) plan.UserKeys {
	return plan.UserKeys{User: user, Field: "spec.config.passwd.users[" + string(rune('0'+i)) + "].sshAuthorizedKeys", Keys: keys}
}

// Preflight decides, for each user whose keys change, before anything is
// touched: written for users the node has, refused naming the user's field
// otherwise; removed keys of a user or home the node lacks are nothing to do.
func TestPreflightSSHUsers(t *testing.T) {
	for _, tt := range []struct {
		name    string
		setup   func(t *testing.T, node string)
		keys    []plan.UserKeys
		files   []string // config files
		field   string   // "" for no refusal
		wantMsg string
	}{
		{name: "alice's keys", keys: []plan.UserKeys{keysOf("alice", 1, "k")}},
		{name: "root's keys", keys: []plan.UserKeys{keysOf("root", 1, "k")}},
		{name: "core and alice", keys: []plan.UserKeys{keysOf("alice", 1, "k"), keysOf("core", 0, "k")}},
		{name: "a user the node lacks", keys: []plan.UserKeys{keysOf("ghost", 2, "k")},
			field: "spec.config.passwd.users[2].sshAuthorizedKeys", wantMsg: `user "ghost" does not exist on the node`},
		{name: "keys removed from a user the node lacks", keys: []plan.UserKeys{keysOf("ghost", 2)}},
		{name: "a missing home", keys: []plan.UserKeys{keysOf("nohome", 1, "k")},
			field: "spec.config.passwd.users[1].sshAuthorizedKeys", wantMsg: "/home/nohome, the home of user nohome, does not exist on the node"},
		{name: "keys removed, home missing", keys: []plan.UserKeys{keysOf("nohome", 1)}},
		{name: "a home in /run", keys: []plan.UserKeys{keysOf("tmpfs", 1, "k")},
			field: "spec.config.passwd.users[1].sshAuthorizedKeys", wantMsg: "emptied at every boot"},
		{name: "a relative home", keys: []plan.UserKeys{keysOf("relhome", 1, "k")},
			field: "spec.config.passwd.users[1].sshAuthorizedKeys", wantMsg: "not an absolute path"},
		{name: "two users, one home", keys: []plan.UserKeys{keysOf("bob", 2, "k"), keysOf("root", 1, "k")},
			field: "spec.config.passwd.users[1].sshAuthorizedKeys", wantMsg: "users bob and root have one home, /root"},
		{name: "alice's .ssh a symlink she owns", setup: func(t *testing.T, node string) {
			symlink(t, node, "home/alice/.ssh", "../../etc")
			lchown(t, node, "home/alice/.ssh", 1001)
		}, keys: []plan.UserKeys{keysOf("alice", 1, "k")}, field: "spec.config.passwd.users[1].sshAuthorizedKeys", wantMsg: "/home/alice/.ssh is a symlink"},
		{name: "alice's keys removed through a symlinked .ssh", setup: func(t *testing.T, node string) {
			symlink(t, node, "home/alice/.ssh", "../../etc")
			lchown(t, node, "home/alice/.ssh", 1001)
		}, keys: []plan.UserKeys{keysOf("alice", 1)}, field: "spec.config.passwd.users[1].sshAuthorizedKeys", wantMsg: "is a symlink"},
		{name: "alice's key file a symlink", setup: func(t *testing.T, node string) {
			mkdir(t, node, "home/alice/.ssh", 0o700, 1001)
			symlink(t, node, "home/alice/.ssh/authorized_keys", "/etc/shadow")
		}, keys: []plan.UserKeys{keysOf("alice", 1, "k")}, field: "spec.config.passwd.users[1].sshAuthorizedKeys", wantMsg: "is a symlink"},
		{name: "alice's .ssh core's", setup: func(t *testing.T, node string) {
			mkdir(t, node, "home/alice/.ssh", 0o700, 1000)
		}, keys: []plan.UserKeys{keysOf("alice", 1, "k")}, field: "spec.config.passwd.users[1].sshAuthorizedKeys", wantMsg: "owned by uid 1000, neither alice (1001) nor root"},
		{name: "a file at alice's keys", keys: []plan.UserKeys{keysOf("alice", 1, "k")}, files: []string{"/home/alice/.ssh/authorized_keys"},
			field: "spec.config.storage.files[0].path", wantMsg: "where the SSH keys of user alice go (spec.config.passwd.users[1].sshAuthorizedKeys)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			node, f := usersNode(t)
			if tt.setup != nil {
				tt.setup(t, node)
			}
			desired := plan.Config{Name: "rendered-x", Files: map[string]plan.File{}}
			for _, k := range tt.keys {
				if len(k.Keys) > 0 {
					if desired.SSHKeys == nil {
						desired.SSHKeys = map[string]plan.UserKeys{}
					}
					desired.SSHKeys[k.User] = k
				}
			}
			for i, p := range tt.files {
				desired.Files[p] = plan.File{Field: "spec.config.storage.files[" + string(rune('0'+i)) + "]", Path: p}
			}
			before := tree(t, node, "")
			err := f.Preflight(plan.Config{}, desired, plan.Diff{SSHKeys: tt.keys})
			assertSame(t, before, tree(t, node, ""))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Preflight: %v", err)
				}
				return
			}
			var ce *plan.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.field+": ") || !strings.Contains(err.Error(), tt.wantMsg) || ce.Object != "rendered-x" {
				t.Fatalf("Preflight: %v, want a refusal of rendered-x at %s: ...%s", err, tt.field, tt.wantMsg)
			}
		})
	}
}

// Alice's keys are written beside core's, hers and 0600 in her 0700 .ssh;
// her own authorized_keys from before comes back when the config drops her
// keys, and a rollback of that removal puts the config's keys back.
func TestSSHKeysOfAnotherUser(t *testing.T) {
	node, f := usersNode(t)
	mkdir(t, node, "home/alice/.ssh", 0o755, 1001)
	put(t, node, "home/alice/.ssh/authorized_keys", "alice's own\n", 0o644)
	if err := os.Chown(filepath.Join(node, "home/alice/.ssh/authorized_keys"), 1001, 1001); err != nil {
		t.Fatal(err)
	}
	own := stateOf(t, filepath.Join(node, "home/alice/.ssh/authorized_keys"))
	commit := func(writes func(tx *Txn) error) *Txn {
		t.Helper()
		tx, err := f.BeginTxn("ssh")
		if err != nil {
			t.Fatal(err)
		}
		if err := writes(tx); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	tx := commit(func(tx *Txn) error {
		if err := tx.WriteSSHKeys("core", []string{"core-key"}); err != nil {
			return err
		}
		return tx.WriteSSHKeys("alice", []string{"a1", "a2"})
	})
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(node, "home/alice/.ssh/authorized_keys")
	if got, want := stateOf(t, keys), (fileState{Kind: "file", Data: "a1\na2\n", Mode: 0o600, UID: 1001, GID: 1001}); got != want {
		t.Errorf("alice's keys = %+v, want %+v", got, want)
	}
	if got := stateOf(t, filepath.Join(node, "home/alice/.ssh")); got.Mode != 0o700 || got.UID != 1001 {
		t.Errorf("alice's .ssh = %+v, want hers, 0700", got)
	}
	if err := f.CheckSSHKeys("alice", []string{"a1", "a2"}); err != nil {
		t.Error(err)
	}
	if err := f.CheckSSHKeys("core", []string{"core-key"}); err != nil {
		t.Error(err)
	}
	if p, err := f.SSHKeysPath("alice"); err != nil || p != "/home/alice/.ssh/authorized_keys" {
		t.Errorf("SSHKeysPath = %s, %v", p, err)
	}

	// Removed, then rolled back: the config's keys again.
	tx = commit(func(tx *Txn) error { return tx.WriteSSHKeys("alice", nil) })
	if got := stateOf(t, keys); got != own {
		t.Errorf("after the removal: %+v, want alice's own %+v", got, own)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := f.CheckSSHKeys("alice", []string{"a1", "a2"}); err != nil {
		t.Errorf("after the rollback: %v", err)
	}
	// Removed for good: her own file, and core's keys untouched.
	tx = commit(func(tx *Txn) error { return tx.WriteSSHKeys("alice", nil) })
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, keys); got != own {
		t.Errorf("after the removal: %+v, want alice's own %+v", got, own)
	}
	if err := f.CheckSSHKeys("core", []string{"core-key"}); err != nil {
		t.Error(err)
	}
	// A user the node no longer has: nothing to remove.
	tx = commit(func(tx *Txn) error { return tx.WriteSSHKeys("ghost", nil) })
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// Keys the daemon wrote into a file that was not there are removed with it.
func TestSSHKeysRemovedWithoutOriginal(t *testing.T) {
	node, f := usersNode(t)
	for _, keys := range [][]string{{"a1"}, nil} {
		tx, err := f.BeginTxn("ssh")
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.WriteSSHKeys("alice", keys); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if got := stateOf(t, filepath.Join(node, "home/alice/.ssh/authorized_keys")); got.Kind != "absent" {
		t.Errorf("authorized_keys = %+v, want removed", got)
	}
	if got := stateOf(t, filepath.Join(node, "home/alice/.ssh")); got.Kind != "dir" || got.UID != 1001 {
		t.Errorf(".ssh = %+v, want alice's folder kept", got)
	}
}

// Alice points her .ssh at /etc, before the write or between the write and
// the removal: neither follows it, and /etc is untouched.
func TestSSHKeysOfAnotherUserSymlinkNotFollowed(t *testing.T) {
	for _, keys := range [][]string{{"k"}, nil} {
		node, f := usersNode(t)
		put(t, node, "etc/authorized_keys", "root's\n", 0o600)
		symlink(t, node, "home/alice/.ssh", "../../etc")
		lchown(t, node, "home/alice/.ssh", 1001)
		etc := tree(t, filepath.Join(node, "etc"), "")
		tx, err := f.BeginTxn("ssh")
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.WriteSSHKeys("alice", keys); err == nil || !strings.Contains(err.Error(), "is a symlink") {
			t.Errorf("keys %q: %v, want a refusal of the symlink", keys, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		assertSame(t, etc, tree(t, filepath.Join(node, "etc"), ""))
	}
}

// A user without a home is refused by the write too: no home is created.
func TestSSHKeysNoHomeCreated(t *testing.T) {
	node, f := usersNode(t)
	tx, err := f.BeginTxn("ssh")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.WriteSSHKeys("nohome", []string{"k"}); err == nil || !strings.Contains(err.Error(), "creates no homes") {
		t.Errorf("write: %v, want a refusal", err)
	}
	if err := tx.WriteSSHKeys("ghost", []string{"k"}); err == nil || !strings.Contains(err.Error(), `unknown user "ghost"`) {
		t.Errorf("write: %v, want a refusal", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, filepath.Join(node, "home/nohome")); got.Kind != "absent" {
		t.Errorf("/home/nohome = %+v, want none", got)
	}
}

// A crash after the keys of core and alice were written, before the
// commit: the resumed write re-runs over the same journal, which keeps the
// state from before the first attempt, so a rollback then puts back both
// homes exactly as they were (alice's own key file, core's missing .ssh).
func TestSSHKeysCrashResumes(t *testing.T) {
	node, f := usersNode(t)
	mkdir(t, node, "home/alice/.ssh", 0o755, 1001)
	put(t, node, "home/alice/.ssh/authorized_keys", "alice's own\n", 0o644)
	homes := func() map[string]fileState {
		m := tree(t, filepath.Join(node, "home"), "")
		for p, s := range tree(t, filepath.Join(node, "var/home"), "") {
			m["var/"+p] = s
		}
		return m
	}
	before := homes()
	write := func() *Txn {
		tx, err := f.BeginTxn("u-ssh")
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"alice", "core"} {
			if err := tx.WriteSSHKeys(u, []string{u + "-key"}); err != nil {
				t.Fatal(err)
			}
		}
		return tx
	}
	write().Close() // crash
	if ids, err := f.PendingTxns(); err != nil || len(ids) != 1 {
		t.Fatalf("pending = %v, %v", ids, err)
	}
	tx := write()
	for _, u := range []string{"alice", "core"} {
		if err := f.CheckSSHKeys(u, []string{u + "-key"}); err != nil {
			t.Errorf("resumed write: %v", err)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	assertSame(t, before, homes())
}
