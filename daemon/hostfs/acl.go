package hostfs

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nodeconfd/nodeconfd/daemon/hostfs/posixacl"
)

// aclWriters returns who besides the owner may write to a file with the
// access ACL data (see package posixacl), as "ACL user 1000", or "" when no
// one: the owning group, a named user other than root or a named group
// granted write, unless the mask takes it. A named group is never trusted,
// not even group 0 (see modeWriters). Others are in the mode bits, which
// the caller checks.
//
// A folder's default ACL (system.posix_acl_default) is not read: it grants
// nothing on the folder itself, and the folders the daemon creates under
// it get mode 0755 through chmod, which sets their mask to r-x and so takes
// write from every named entry they inherit.
func aclWriters(data []byte) (string, error) {
	es, err := posixacl.Parse(data)
	if err != nil {
		return "", err
	}
	mask := posixacl.Write // no mask: the entries count as they are
	var who []string
	for _, e := range es {
		write := e.Perm&posixacl.Write != 0
		switch {
		case e.Tag == posixacl.Mask:
			mask = e.Perm
		case e.Tag == posixacl.User && write && e.ID != 0:
			who = append(who, fmt.Sprintf("ACL user %d", e.ID))
		case e.Tag == posixacl.Group && write:
			who = append(who, fmt.Sprintf("ACL group %d", e.ID))
		case e.Tag == posixacl.GroupObj && write:
			who = append(who, "its group")
		}
	}
	if mask&posixacl.Write == 0 || len(who) == 0 {
		return "", nil
	}
	return who[0], nil
}

// modeWriters returns who besides the owner may write to a file by its mode
// bits, or "" when no one. Group write counts whatever the group, group 0
// too: who is in a group may come from sources the daemon cannot read
// (SSSD, LDAP, systemd-userdb, pam_group), so only the owner, root, is
// known to be root. With an ACL, the group bits are its mask: hasACL
// says to look at the ACL for who the mask lets write.
func modeWriters(mode uint32) (who string, hasACL bool) {
	switch {
	case mode&0o002 != 0:
		return "all users", false
	case mode&0o020 != 0:
		return "its group", true
	}
	return "", false
}

// writers returns who besides root may write to the folder rel (st its
// Lstat), by its mode bits and its ACL, or "" when no one. The ACL is read
// only when the group bits grant write: else its mask, which they are,
// takes write from every entry.
func (b *batch) writers(rel string, st *syscall.Stat_t) (string, error) {
	who, maybeACL := modeWriters(st.Mode)
	if !maybeACL {
		return who, nil
	}
	acl, err := b.folderACL(rel, st)
	if err != nil || acl == nil {
		return who, err
	}
	who, err = aclWriters(acl)
	if err != nil {
		return "", fmt.Errorf("reading the ACL of /%s: %w", rel, err)
	}
	return who, nil
}

// folderACL reads the access ACL of the folder rel (a real path, see
// realDir) through a handle opened without following any symlink, and
// checks that it is the folder st describes. It returns nil when the
// folder has no ACL beyond its mode bits.
func (b *batch) folderACL(rel string, st *syscall.Stat_t) ([]byte, error) {
	fh, err := b.openReal(rel)
	if err != nil {
		return nil, fmt.Errorf("reading the ACL of /%s: %w", rel, err)
	}
	defer fh.Close()
	var now unix.Stat_t
	if err := unix.Fstat(int(fh.Fd()), &now); err != nil {
		return nil, fmt.Errorf("reading the ACL of /%s: %w", rel, err)
	}
	if now.Ino != st.Ino || now.Dev != st.Dev {
		return nil, fmt.Errorf("folder /%s changed while being checked", rel)
	}
	buf := make([]byte, 256)
	for {
		n, err := unix.Fgetxattr(int(fh.Fd()), posixacl.AccessXattr, buf)
		switch {
		case errors.Is(err, unix.ENODATA), errors.Is(err, unix.EOPNOTSUPP):
			return nil, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < 1<<16: // the xattr size limit
			buf = make([]byte, 2*len(buf))
			continue
		case err != nil:
			return nil, fmt.Errorf("reading the ACL of /%s: %w", rel, err)
		}
		return buf[:n], nil
	}
}

// openReal opens the folder rel, a path of the root without symlinks,
// refusing any symlink or ".." on the way (openat2 RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS), so that the handle is that very folder.
func (b *batch) openReal(rel string) (*os.File, error) {
	rf, err := b.f.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer rf.Close()
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(int(rf.Fd()), rel, &how)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}
