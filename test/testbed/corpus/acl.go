package corpus

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nodeconfd/nodeconfd/daemon/hostfs/posixacl"
)

// setACL gives rel the access ACL of its mode bits plus one named entry,
// spec "user:ID:PERMS" or "group:ID:PERMS", with the mask setfacl -m sets.
func (u *Undo) setACL(rel, spec string) error {
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return fmt.Errorf("ACL entry %q: want user|group:ID:PERMS", spec)
	}
	e := posixacl.Entry{Tag: posixacl.User}
	switch parts[0] {
	case "user":
	case "group":
		e.Tag = posixacl.Group
	default:
		return fmt.Errorf("ACL entry %q: want user or group", spec)
	}
	id, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return fmt.Errorf("ACL entry %q: %w", spec, err)
	}
	e.ID = uint32(id)
	for i, c := range []byte(parts[2]) {
		if i > 2 || (c != "rwx"[i] && c != '-') {
			return fmt.Errorf("ACL entry %q: want PERMS as rwx", spec)
		}
		if c != '-' {
			e.Perm |= []uint16{posixacl.Read, posixacl.Write, posixacl.Execute}[i]
		}
	}
	fi, err := u.root.Stat(rel)
	if err != nil {
		return err
	}
	mode := fi.Sys().(*syscall.Stat_t).Mode
	return u.putACL(rel, posixacl.Encode(posixacl.FromMode(mode, []posixacl.Entry{e})))
}

// getACL returns the access ACL of rel, nil for none.
func (u *Undo) getACL(rel string) ([]byte, error) {
	fh, err := u.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	buf := make([]byte, 4096)
	n, err := unix.Fgetxattr(int(fh.Fd()), posixacl.AccessXattr, buf)
	if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the ACL of /%s: %w", rel, err)
	}
	return buf[:n], nil
}

// putACL sets the access ACL of rel to acl, or removes it when nil.
func (u *Undo) putACL(rel string, acl []byte) error {
	fh, err := u.root.Open(rel)
	if err != nil {
		return err
	}
	defer fh.Close()
	if acl == nil {
		err = unix.Fremovexattr(int(fh.Fd()), posixacl.AccessXattr)
		if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) {
			err = nil
		}
	} else {
		err = unix.Fsetxattr(int(fh.Fd()), posixacl.AccessXattr, acl, 0)
	}
	if err != nil {
		return fmt.Errorf("setting the ACL of /%s: %w", rel, err)
	}
	return nil
}
