package corpus

import (
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nodeconfd/nodeconfd/daemon/hostfs/posixacl"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// tree describes every path under dir: type, mode, owner, contents or target.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String() + " " + itoa(st.Uid) + ":" + itoa(st.Gid))
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			b.WriteString(" -> " + target)
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		if acl := make([]byte, 256); fi.Mode()&fs.ModeSymlink == 0 {
			if n, err := unix.Lgetxattr(p, posixacl.AccessXattr, acl); err == nil {
				b.WriteString(" acl " + hex.EncodeToString(acl[:n]))
			}
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// Every verb changes the node root as documented, never outside it, and
// the undo puts back exactly what was there.
func TestSetupAndUndo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	root := t.TempDir()
	for _, d := range []string{"etc/dir/sub", "home/core/.ssh"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{"etc/passwd": "root:x:0:0::/root:/bin/sh\n", "etc/group": "root:x:0:\n", "etc/keep": "old",
		"etc/dir/sub/f": "in a folder a symlink replaces"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	before := tree(t, root)
	outside := t.TempDir()
	u, err := Setup(root, []string{
		"mkdir /var/lib/x/y",
		"file /var/lib/x/y/f hello world",
		`file etc/keep "new\ncontents"`,
		"chown /etc/keep 7:8",
		"chmod /etc/keep 4755",
		"symlink /home/core/.ssh/authorized_keys " + outside,
		"chown /home/core/.ssh/authorized_keys 5:5",
		"chown /home/core/.ssh 1000:1000",
		"symlink /etc/dir ../home",
		"symlink /etc/dir ../var",
		"user mallory 4242",
		"mkdir /var/lib/x/acl",
		"acl /var/lib/x/acl group:0:rwx",
		"acl /etc/passwd user:1000:rw-",
	})
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"var/lib/x/y/f": "hello world",
		"etc/keep":      "new\ncontents",
		"etc/passwd":    "root:x:0:0::/root:/bin/sh\nmallory:x:4242:4242::/home/mallory:/usr/sbin/nologin\n",
		"etc/group":     "root:x:0:\nmallory:x:4242:\n",
	}
	for p, want := range checks {
		if data, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(data) != want {
			t.Errorf("%s = %q, %v; want %q", p, data, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "etc/keep")); err != nil || fi.Mode() != 0o755|fs.ModeSetuid || fi.Sys().(*syscall.Stat_t).Uid != 7 {
		t.Errorf("etc/keep: %v %v", fi.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(root, "etc/dir")); err != nil || target != "../var" {
		t.Errorf("etc/dir -> %q, %v", target, err)
	}
	if target, err := os.Readlink(filepath.Join(root, "home/core/.ssh/authorized_keys")); err != nil || target != outside {
		t.Errorf("symlink -> %q, %v", target, err)
	}
	for p, want := range map[string]string{"var/lib/x/acl": "group:0:rwx", "etc/passwd": "user:1000:rw-"} {
		if got := aclOf(t, filepath.Join(root, p)); got != want {
			t.Errorf("%s: named ACL entry %q, want %q", p, got, want)
		}
	}
	if err := u.Run(); err != nil {
		t.Fatal(err)
	}
	if after := tree(t, root); after != before {
		t.Errorf("after undo:\n%s\nwant:\n%s", after, before)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("setup wrote outside the root: %v", entries)
	}
}

// aclOf returns the one named entry of the ACL of p, as the acl verb
// takes it.
func aclOf(t *testing.T, p string) string {
	t.Helper()
	buf := make([]byte, 256)
	n, err := unix.Getxattr(p, posixacl.AccessXattr, buf)
	if err != nil {
		t.Fatal(err)
	}
	es, err := posixacl.Parse(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Tag == posixacl.User || e.Tag == posixacl.Group {
			kind := map[posixacl.Tag]string{posixacl.User: "user", posixacl.Group: "group"}[e.Tag]
			perms := []byte("---")
			for i, bit := range []uint16{posixacl.Read, posixacl.Write, posixacl.Execute} {
				if e.Perm&bit != 0 {
					perms[i] = "rwx"[i]
				}
			}
			return kind + ":" + strconv.FormatUint(uint64(e.ID), 10) + ":" + string(perms)
		}
	}
	return ""
}

// A verb that fails undoes the verbs before it.
func TestSetupFailureUndoes(t *testing.T) {
	root := t.TempDir()
	if _, err := Setup(root, []string{"mkdir /a/b", "bogus /a x"}); err == nil || !strings.Contains(err.Error(), "unknown verb") {
		t.Fatalf("Setup: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "a")); !os.IsNotExist(err) {
		t.Errorf("/a left after a failed setup: %v", err)
	}
}

// The committed corpus follows the format.
func TestLoadCorpus(t *testing.T) {
	cases, err := Load("../../e2e/testdata/hostile")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
}

// The config-only cases of the corpus are refused by the pure checks
// already, naming the corpus field: a fast check of the corpus itself.
// Cases refused only against the node's files (owners, symlinks) pass
// here and are left to the e2e runner.
func TestCorpusRefusedByPlan(t *testing.T) {
	cases, err := Load("../../e2e/testdata/hostile")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		cfg, err := plan.Parse(c.Config)
		var ce *plan.ConfigError
		switch {
		case errors.As(err, &ce):
			if ce.Field != c.Field || c.State != "Degraded" {
				t.Errorf("%s: refused at %s (%v), corpus says %s, %s", c.File, ce.Field, err, c.Field, c.State)
			}
		case err != nil:
			t.Errorf("%s: %v", c.File, err)
		default:
			t.Logf("%s: left to the node-side checks (%d files)", c.File, len(cfg.Files))
		}
	}
}
