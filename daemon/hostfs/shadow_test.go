package hostfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const shadowFile = "root:!locked::0:99999:7:::\ncore:*:19000:0:99999:7:::\nbin:*:19000::::::\n"

func TestSetShadowHash(t *testing.T) {
	tests := []struct {
		name, data, hash string
		want             string
		fails            bool
	}{
		{"sets hash and date", shadowFile, "$6$s$h",
			"root:!locked::0:99999:7:::\ncore:$6$s$h:20000:0:99999:7:::\nbin:*:19000::::::\n", false},
		{"same hash: untouched", shadowFile, "*", shadowFile, false},
		{"last line without newline", "core:x:1", "$6$s$h", "core:$6$s$h:20000", false},
		{"two fields only", "core:x\n", "$6$s$h", "core:$6$s$h\n", false},
		{"no entry", "root:*:1:::::\n", "$6$s$h", "", true},
		// A name that only starts like core's is another user's.
		{"core2 is not core", "core2:*:1:::::\n", "$6$s$h", "", true},
	}
	for _, tt := range tests {
		got, err := SetShadowHash([]byte(tt.data), "core", tt.hash, 20000)
		if (err != nil) != tt.fails || (!tt.fails && string(got) != tt.want) {
			t.Errorf("%s: SetShadowHash = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// The hash goes into /etc/shadow with its mode and owner kept, through the
// journal: the rollback restores the file byte for byte.
func TestPasswordHashSetAndRolledBack(t *testing.T) {
	node, f := coreNode(t)
	put(t, node, "etc/shadow", shadowFile, 0o640)
	if err := os.Chown(filepath.Join(node, "etc/shadow"), 0, 42); err != nil {
		t.Fatal(err)
	}
	before := tree(t, filepath.Join(node, "etc"), "")
	tx, err := f.BeginTxn("pw")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.SetPasswordHash("$y$j9T$salt$hash"); err != nil {
		t.Fatal(err)
	}
	st := stateOf(t, filepath.Join(node, "etc/shadow"))
	if !strings.Contains(st.Data, "\ncore:$y$j9T$salt$hash:") || st.Mode != 0o640 || st.GID != 42 {
		t.Errorf("shadow after = %+v", st)
	}
	if !strings.HasPrefix(st.Data, "root:!locked::0:99999:7:::\n") || !strings.HasSuffix(st.Data, "\nbin:*:19000::::::\n") {
		t.Errorf("other entries changed: %q", st.Data)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// The lock file stays, as lckpwdf leaves it.
	if err := os.Remove(filepath.Join(node, "etc/.pwd.lock")); err != nil {
		t.Error(err)
	}
	assertSame(t, before, tree(t, filepath.Join(node, "etc"), ""))
}

// A hostile hash never reaches the file; a symlinked /etc/shadow is not
// followed; "" locks the password as machine-config-daemon does ("*").
func TestPasswordHashRefused(t *testing.T) {
	node, f := coreNode(t)
	put(t, node, "etc/shadow", "core:$6$a$b:1:::::\n", 0o600)
	tx, err := f.BeginTxn("pw")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"x:0:0\nevil::0:0", "$(reboot)"} {
		if err := tx.SetPasswordHash(h); err == nil {
			t.Errorf("SetPasswordHash(%q) accepted", h)
		}
	}
	if got := stateOf(t, filepath.Join(node, "etc/shadow")).Data; got != "core:$6$a$b:1:::::\n" {
		t.Errorf("shadow = %q", got)
	}
	if err := tx.SetPasswordHash(""); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, filepath.Join(node, "etc/shadow")).Data; !strings.HasPrefix(got, "core:*:") {
		t.Errorf("shadow after \"\" = %q", got)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(node, "etc/shadow")); err != nil {
		t.Fatal(err)
	}
	symlink(t, node, "etc/shadow", "../outside/secret")
	tx, err = f.BeginTxn("pw2")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.SetPasswordHash("$6$a$c"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("symlinked shadow: %v", err)
	}
}
