package hostfs

import (
	"errors"
	"fmt"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// preflightSSH checks that the keys of k.User can be written without
// following anything the user controls: the user exists on the node (the
// daemon never creates one), its home exists and is the user's or root's,
// and so are ~/.ssh and the key file when there. Keys removed from a user
// the node no longer has, or whose home is gone or where the daemon never
// writes, leave nothing to remove.
func (b *batch) preflightSSH(k plan.UserKeys) error {
	u, err := b.sshUserOf(k.User)
	removed := len(k.Keys) == 0
	switch {
	case removed && err != nil:
		return nil
	case errors.Is(err, errUnknownUser):
		return fmt.Errorf("user %q does not exist on the node: the daemon writes SSH keys only for users the node has, it creates none", k.User)
	case err != nil:
		return err
	}
	if err := b.checkSSH(u); err != nil && !(removed && errors.Is(err, errNoHome)) {
		return err
	}
	return nil
}

// sshClaims refuses, for the users of desired with keys, a file of the
// config at a user's ~/.ssh or key file (the keys go there), and two users
// whose key files are one file (a shared home: each update would write
// the other's keys over). A user the node lacks is refused by
// preflightSSH when its keys change.
func (b *batch) sshClaims(desired plan.Config, refuse func(string, error)) {
	owner := map[string]string{} // key file: user
	for _, name := range plan.SortedKeys(desired.SSHKeys) {
		k := desired.SSHKeys[name]
		u, err := b.sshUserOf(name)
		if err != nil {
			continue
		}
		for _, p := range []string{"/" + u.dir, u.keysPath()} {
			if file, ok := desired.Files[p]; ok {
				refuse(file.Field+".path", fmt.Errorf("%s is where the SSH keys of user %s go (%s)", p, name, k.Field))
			}
		}
		if other, ok := owner[u.keys]; ok {
			refuse(k.Field, fmt.Errorf("users %s and %s have one home, %s: each update would write the keys of one over the other's", other, name, "/"+u.home))
			continue
		}
		owner[u.keys] = name
	}
}
