package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

const sshField = "spec.config.passwd.users[0].sshAuthorizedKeys"

// sshDiff is a change of core's keys to one key.
func sshDiff() plan.Diff {
	return plan.Diff{SSHKeys: []plan.UserKeys{{User: "core", Field: sshField, Keys: []string{"ssh-ed25519 AAAA"}}}}
}

// coreNode is a node where core owns its home, as on a real host.
func coreNode(t *testing.T) (string, *FS) {
	node, f := newNode(t)
	mkdir(t, node, "var/home/core", 0o700, 1000)
	mkdir(t, node, "etc/ssh", 0o755, 0)
	return node, f
}

// Core replaces ~/.ssh (or the key file) with a symlink, or hands it to
// another user: refused in Preflight naming the SSH keys field, and again
// by the write, with /etc untouched.
func TestSSHHostileFoldersRefused(t *testing.T) {
	for _, tt := range []struct {
		name    string
		setup   func(t *testing.T, node string)
		wantMsg string
	}{
		{"ssh symlink to etc", func(t *testing.T, node string) {
			symlink(t, node, "var/home/core/.ssh", "../../../etc")
		}, "is a symlink"},
		{"ssh absolute symlink", func(t *testing.T, node string) {
			symlink(t, node, "var/home/core/.ssh", "/etc")
		}, "is a symlink"},
		{"keys symlink", func(t *testing.T, node string) {
			mkdir(t, node, "var/home/core/.ssh", 0o700, 1000)
			symlink(t, node, "var/home/core/.ssh/authorized_keys", "../../../../etc/shadow")
		}, "is a symlink"},
		{"ssh of another user", func(t *testing.T, node string) {
			mkdir(t, node, "var/home/core/.ssh", 0o700, 1001)
		}, "owned by uid 1001"},
		{"ssh is a file", func(t *testing.T, node string) {
			put(t, node, "var/home/core/.ssh", "x", 0o600)
		}, "want a folder"},
		{"home of another user", func(t *testing.T, node string) {
			if err := os.Chown(filepath.Join(node, "var/home/core"), 1001, 1001); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 1001"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			node, f := coreNode(t)
			tt.setup(t, node)
			put(t, node, "etc/shadow", "secret", 0o600)
			etc := tree(t, filepath.Join(node, "etc"), "")
			err := f.Preflight(plan.Config{}, plan.Config{Name: "rendered-x"}, sshDiff())
			var ce *plan.ConfigError
			if !errors.As(err, &ce) || ce.Field != sshField || !strings.Contains(ce.Msg, tt.wantMsg) {
				t.Fatalf("Preflight: %v, want a refusal at %s: ...%s", err, sshField, tt.wantMsg)
			}
			tx, err := f.BeginTxn("ssh")
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.WriteSSHKeys("core", []string{"ssh-ed25519 AAAA"}); err == nil {
				t.Fatal("the write succeeded")
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if err := f.CheckSSHKeys("core", []string{"ssh-ed25519 AAAA"}); err == nil {
				t.Error("CheckSSHKeys passed")
			}
			assertSame(t, etc, tree(t, filepath.Join(node, "etc"), ""))
		})
	}
}

func assertSame(t *testing.T, before, after map[string]fileState) {
	t.Helper()
	for p, st := range after {
		if b, ok := before[p]; !ok || b != st {
			t.Errorf("%s is %+v, was %+v", p, st, b)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s is gone", p)
		}
	}
}

// Core swaps ~/.ssh for a symlink after the preflight: the write refuses.
func TestSSHSwapAfterPreflight(t *testing.T) {
	node, f := coreNode(t)
	if err := f.Preflight(plan.Config{}, plan.Config{Name: "rendered-x"}, sshDiff()); err != nil {
		t.Fatal(err)
	}
	symlink(t, node, "var/home/core/.ssh", "../../../etc")
	etc := tree(t, filepath.Join(node, "etc"), "")
	tx, err := f.BeginTxn("ssh")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.WriteSSHKeys("core", []string{"k"}); err == nil {
		t.Fatal("the write succeeded")
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	assertSame(t, etc, tree(t, filepath.Join(node, "etc"), ""))
}

// Rollback puts ~/.ssh back as it was: removed when the write made it,
// its owner and mode restored when it was there.
func TestSSHRollbackRestoresFolder(t *testing.T) {
	for _, existed := range []bool{false, true} {
		node, f := coreNode(t)
		sshDir := filepath.Join(node, "var/home/core/.ssh")
		if existed {
			mkdir(t, node, "var/home/core/.ssh", 0o755, 0)
			put(t, node, "var/home/core/.ssh/authorized_keys", "old\n", 0o644)
		}
		before := tree(t, filepath.Join(node, "var/home"), "")
		tx, err := f.BeginTxn("ssh")
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.WriteSSHKeys("core", []string{"new"}); err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, sshDir); got.Mode != 0o700 || got.UID != 1000 || got.GID != 1000 {
			t.Errorf("existed %v: .ssh = %+v, want core's 0700", existed, got)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		assertSame(t, before, tree(t, filepath.Join(node, "var/home"), ""))
	}
}

// Core swaps ~/.ssh for a symlink to /etc after the write: the rollback
// refuses to follow it rather than restore into /etc.
func TestSSHRollbackDoesNotFollowSwap(t *testing.T) {
	node, f := coreNode(t)
	tx, err := f.BeginTxn("ssh")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.WriteSSHKeys("core", []string{"new"}); err != nil {
		t.Fatal(err)
	}
	ssh := filepath.Join(node, "var/home/core/.ssh")
	if err := os.Rename(ssh, ssh+"-moved"); err != nil {
		t.Fatal(err)
	}
	symlink(t, node, "var/home/core/.ssh", "../../../etc")
	put(t, node, "etc/authorized_keys", "root's", 0o600)
	etc := tree(t, filepath.Join(node, "etc"), "")
	if err := tx.Rollback(); err == nil || !strings.Contains(err.Error(), "refusing to follow") {
		t.Errorf("Rollback: %v, want a refusal to follow the symlink", err)
	}
	assertSame(t, etc, tree(t, filepath.Join(node, "etc"), ""))
}

// A file of the config where core's SSH keys go is refused, naming it.
func TestPreflightFileAtSSHKeys(t *testing.T) {
	_, f := coreNode(t)
	file := fileAt("spec.config.storage.files[2]", "/var/home/core/.ssh/authorized_keys")
	desired := plan.Config{Name: "rendered-x", SSHKeys: map[string]plan.UserKeys{"core": sshDiff().SSHKeys[0]},
		Files: map[string]plan.File{file.Path: file}}
	err := f.Preflight(plan.Config{}, desired, sshDiff())
	var ce *plan.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "spec.config.storage.files[2].path") {
		t.Fatalf("Preflight: %v, want a refusal naming files[2].path", err)
	}
}
