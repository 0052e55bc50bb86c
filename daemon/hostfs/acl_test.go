package hostfs

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nodeconfd/nodeconfd/daemon/hostfs/posixacl"
	"github.com/nodeconfd/nodeconfd/phases/plan"
)

func TestACLWriters(t *testing.T) {
	rwx := posixacl.Read | posixacl.Write | posixacl.Execute
	rx := posixacl.Read | posixacl.Execute
	user := func(id uint32, p uint16) posixacl.Entry { return posixacl.Entry{Tag: posixacl.User, ID: id, Perm: p} }
	group := func(id uint32, p uint16) posixacl.Entry { return posixacl.Entry{Tag: posixacl.Group, ID: id, Perm: p} }
	withMask := func(es []posixacl.Entry, p uint16) []posixacl.Entry {
		for i := range es {
			if es[i].Tag == posixacl.Mask {
				es[i].Perm = p
			}
		}
		return es
	}
	tests := []struct {
		name string
		acl  []posixacl.Entry
		want string
	}{
		{"mode only", posixacl.FromMode(0o755, nil), ""},
		{"user 1000 rwx", posixacl.FromMode(0o755, []posixacl.Entry{user(1000, rwx)}), "ACL user 1000"},
		{"user 1000 r-x", posixacl.FromMode(0o755, []posixacl.Entry{user(1000, rx)}), ""},
		{"root rwx", posixacl.FromMode(0o755, []posixacl.Entry{user(0, rwx)}), ""},
		{"group 0 rwx", posixacl.FromMode(0o755, []posixacl.Entry{group(0, rwx)}), "ACL group 0"},
		{"group 10 rwx", posixacl.FromMode(0o755, []posixacl.Entry{group(10, rwx)}), "ACL group 10"},
		{"owning group w", posixacl.FromMode(0o775, []posixacl.Entry{user(0, rwx)}), "its group"},
		{"masked", withMask(posixacl.FromMode(0o755, []posixacl.Entry{user(1000, rwx), group(10, rwx)}), rx), ""},
	}
	for _, tt := range tests {
		got, err := aclWriters(posixacl.Encode(tt.acl))
		if err != nil || got != tt.want {
			t.Errorf("%s: aclWriters = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	if _, err := aclWriters([]byte{2, 0, 0}); err == nil {
		t.Error("a malformed ACL was read")
	}
}

// setACL gives the host folder rel under node the ACL of its mode plus
// named entries, as setfacl -m does.
func setACL(t *testing.T, node, rel string, mode uint32, named ...posixacl.Entry) {
	t.Helper()
	data := posixacl.Encode(posixacl.FromMode(mode, named))
	if err := unix.Setxattr(filepath.Join(node, rel), posixacl.AccessXattr, data, 0); err != nil {
		t.Fatal(err)
	}
}

// Issue 27: a folder writable through group 0 or through an ACL lets a
// non-root user plant a symlink there; a write through it is refused
// before anything is written, naming the field.
func TestPreflightGroupAndACL(t *testing.T) {
	node, f := newNode(t)
	rwx := posixacl.Read | posixacl.Write | posixacl.Execute
	mkdir(t, node, "etc/group0", 0o775, 0)
	mkdir(t, node, "etc/acluser", 0o755, 0)
	setACL(t, node, "etc/acluser", 0o755, posixacl.Entry{Tag: posixacl.User, ID: 1000, Perm: rwx})
	mkdir(t, node, "etc/aclgroup/deep", 0o755, 0)
	setACL(t, node, "etc/aclgroup", 0o755, posixacl.Entry{Tag: posixacl.Group, ID: 0, Perm: rwx})
	mkdir(t, node, "etc/aclroot", 0o755, 0)
	setACL(t, node, "etc/aclroot", 0o755, posixacl.Entry{Tag: posixacl.User, ID: 0, Perm: rwx})
	mkdir(t, node, "etc/aclread", 0o755, 0)
	setACL(t, node, "etc/aclread", 0o755, posixacl.Entry{Tag: posixacl.User, ID: 1000, Perm: posixacl.Read})
	mkdir(t, node, "tmp", 0o1775, 0) // sticky, group 0 writable: a file there must be root's
	tests := []struct{ path, wantMsg string }{
		{"/etc/group0/x", "writable by other users (its group; mode 0775)"},
		{"/etc/acluser/x", "writable by other users (ACL user 1000"},
		{"/etc/aclgroup/deep/x", "writable by other users (ACL group 0"},
		{"/etc/aclroot/x", ""},
		{"/etc/aclread/x", ""},
		{"/tmp/x", "missing in a folder other users can write to"},
	}
	for _, tt := range tests {
		diff := plan.Diff{ChangedFiles: []plan.File{fileAt("spec.config.storage.files[0]", "/etc/ok"), fileAt("spec.config.storage.files[1]", tt.path)}}
		err := f.Preflight(plan.Config{}, plan.Config{Name: "rendered-x"}, diff)
		var ce *plan.ConfigError
		switch {
		case tt.wantMsg == "" && err != nil:
			t.Errorf("%s: %v", tt.path, err)
		case tt.wantMsg != "" && (!errors.As(err, &ce) || ce.Field != "spec.config.storage.files[1].path" || !strings.Contains(ce.Msg, tt.wantMsg)):
			t.Errorf("%s: Preflight = %v, want files[1].path: ...%s", tt.path, err, tt.wantMsg)
		}
	}
}
