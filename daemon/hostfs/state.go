package hostfs

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// AsideMark separates a state file's name from the stamp of a copy moved
// aside: <name>.corrupt-<stamp>.
const AsideMark = ".corrupt-"

// MoveStateAside renames the state file /var/lib/nodeconfd/<name> to
// <name>.corrupt-<stamp> (a free name: -1, -2 … is added when it is taken),
// so that the daemon can go on without it and an administrator can still
// read it. Of the copies of name moved aside, this one and the keep-1
// newest others are kept (by name: stamps sort by time), older ones removed. It returns the new
// name; a missing file is an error that wraps fs.ErrNotExist.
func (f *FS) MoveStateAside(name, stamp string, keep int) (string, error) {
	if err := checkStateName(name); err != nil {
		return "", err
	}
	if err := f.writable("moving state " + name + " aside"); err != nil {
		return "", err
	}
	if !validName(stamp) || strings.ContainsAny(stamp, "/.") {
		return "", fmt.Errorf("invalid stamp %q", stamp)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.root.OpenRoot(stateRel)
	if err != nil {
		return "", fmt.Errorf("moving state %s aside: %w", name, err)
	}
	defer d.Close()
	if _, err := d.Lstat(name); err != nil {
		return "", fmt.Errorf("moving state %s aside: %w", name, err)
	}
	aside := name + AsideMark + stamp
	for i := 1; ; i++ {
		if _, err := d.Lstat(aside); isNotExist(err) {
			break
		} else if err != nil {
			return "", fmt.Errorf("moving state %s aside: %w", name, err)
		}
		aside = name + AsideMark + stamp + "-" + strconv.Itoa(i)
	}
	if err := d.Rename(name, aside); err != nil {
		return "", fmt.Errorf("moving state %s aside: %w", name, err)
	}
	if err := syncDir(d, "."); err != nil {
		return "", fmt.Errorf("moving state %s aside: %w", name, err)
	}
	if err := pruneAside(d, name, aside, keep); err != nil {
		return aside, fmt.Errorf("moving state %s aside: %w", name, err)
	}
	return aside, nil
}

// pruneAside removes all but the keep newest copies of name moved aside;
// the copy just made (aside) always stays.
func pruneAside(d *os.Root, name, aside string, keep int) error {
	dir, err := d.Open(".")
	if err != nil {
		return err
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return err
	}
	var copies []string
	for _, n := range names {
		if strings.HasPrefix(n, name+AsideMark) && n != aside {
			copies = append(copies, n)
		}
	}
	slices.SortFunc(copies, compareAside)
	for len(copies) > max(keep, 1)-1 {
		if err := d.RemoveAll(copies[0]); err != nil {
			return err
		}
		copies = copies[1:]
	}
	return syncDir(d, ".")
}

// compareAside orders copies by stamp, then by the -N added to a stamp
// that was taken.
func compareAside(a, b string) int {
	sa, na := splitAside(a)
	sb, nb := splitAside(b)
	if c := strings.Compare(sa, sb); c != 0 {
		return c
	}
	return na - nb
}

func splitAside(n string) (string, int) {
	_, rest, _ := strings.Cut(n, AsideMark)
	if stamp, num, ok := strings.Cut(rest, "-"); ok {
		if i, err := strconv.Atoi(num); err == nil {
			return stamp, i
		}
	}
	return rest, 0
}
