package hostfs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// idTable holds the node's users and groups by name, read from /etc/passwd
// and /etc/group, then from /usr/lib/passwd and /usr/lib/group (nss-altfiles,
// used by RHCOS and Fedora CoreOS for system accounts); /etc wins.
type idTable struct {
	users  map[string]userEntry
	groups map[string]int
}

type userEntry struct {
	uid, gid int
	home     string
}

// lookupOwner returns the uid and gid of a file's user and group: IDs are
// used as given, names are resolved against the node's own account files,
// and the zero Owner is root.
func (f *FS) lookupOwner(user, group plan.Owner) (uid, gid int, err error) {
	b := f.newBatch()
	defer b.close()
	return b.owner(user, group)
}

// owner resolves like lookupOwner, reading the account files at most once
// per batch.
func (b *batch) owner(user, group plan.Owner) (uid, gid int, err error) {
	if uid, err = b.resolve(user, true); err != nil {
		return 0, 0, err
	}
	if gid, err = b.resolve(group, false); err != nil {
		return 0, 0, err
	}
	return uid, gid, nil
}

func (b *batch) resolve(o plan.Owner, isUser bool) (int, error) {
	if o.ID != nil {
		if !validID(*o.ID) {
			return 0, fmt.Errorf("ID %d is outside 0..%d", *o.ID, plan.MaxID)
		}
		return *o.ID, nil
	}
	if o.Name == "" {
		return 0, nil
	}
	if err := b.loadIDs(); err != nil {
		return 0, err
	}
	if isUser {
		if u, ok := b.ids.users[o.Name]; ok {
			return u.uid, nil
		}
		return 0, fmt.Errorf("unknown user %q on the node", o.Name)
	}
	if gid, ok := b.ids.groups[o.Name]; ok {
		return gid, nil
	}
	return 0, fmt.Errorf("unknown group %q on the node", o.Name)
}

// errUnknownUser says that the node's account files have no such user.
var errUnknownUser = errors.New("unknown user")

// user returns the node's account of a user by name.
func (b *batch) user(name string) (userEntry, error) {
	if err := b.loadIDs(); err != nil {
		return userEntry{}, err
	}
	u, ok := b.ids.users[name]
	if !ok {
		return userEntry{}, fmt.Errorf("%w %q on the node", errUnknownUser, name)
	}
	return u, nil
}

func (b *batch) loadIDs() error {
	if b.ids != nil {
		return nil
	}
	t := &idTable{users: map[string]userEntry{}, groups: map[string]int{}}
	for _, p := range []string{"etc/passwd", "usr/lib/passwd"} {
		if err := b.parseAccounts(p, 7, func(fields []string) {
			uid, err1 := strconv.Atoi(fields[2])
			gid, err2 := strconv.Atoi(fields[3])
			if _, seen := t.users[fields[0]]; !seen && err1 == nil && err2 == nil {
				t.users[fields[0]] = userEntry{uid: uid, gid: gid, home: fields[5]}
			}
		}); err != nil {
			return err
		}
	}
	for _, p := range []string{"etc/group", "usr/lib/group"} {
		if err := b.parseAccounts(p, 4, func(fields []string) {
			gid, err := strconv.Atoi(fields[2])
			if _, seen := t.groups[fields[0]]; !seen && err == nil {
				t.groups[fields[0]] = gid
			}
		}); err != nil {
			return err
		}
	}
	b.ids = t
	return nil
}

// parseAccounts calls fn with the colon-separated fields of every line of an
// account file that has n fields; a missing file has no lines. A file whose
// folder is a file (a config that writes /usr on a node without one) is
// missing too, as the C library's lookups see it.
func (b *batch) parseAccounts(rel string, n int, fn func(fields []string)) error {
	data, err := b.f.root.ReadFile(rel)
	if isNotExist(err) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading /%s: %w", rel, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue // blank, comment, NIS compat
		}
		if fields := strings.Split(line, ":"); len(fields) == n && fields[0] != "" {
			fn(fields)
		}
	}
	return nil
}
