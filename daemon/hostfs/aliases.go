package hostfs

import (
	"cmp"
	"fmt"
	"path"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// entryPath is one path the desired config writes, with its field.
type entryPath struct {
	path, field string
}

// sameFiles refuses two entries of the desired config whose paths reach
// one node file through symlinked folders (/opt links to var/opt: entries
// /opt/x and /var/opt/x): the later write would overwrite the earlier one
// and the node could never match both. Plan refuses equal paths; only the
// node knows its symlinks. Paths whose folders cannot be resolved are
// refused on their own (checkWrite) or left alone (unchanged files).
func (b *batch) sameFiles(desired plan.Config, refuse func(string, error)) {
	var entries []entryPath
	for _, p := range plan.SortedKeys(desired.Files) {
		entries = append(entries, entryPath{p, desired.Files[p].Field + ".path"})
	}
	for _, name := range plan.SortedKeys(desired.Units) {
		u := desired.Units[name]
		files, err := unitFiles(u)
		if err != nil {
			continue
		}
		for _, f := range files {
			field := u.Field + ".contents"
			if f.Path != unitDir+"/"+u.Name {
				field = u.Field + ".dropins"
			}
			entries = append(entries, entryPath{f.Path, field})
		}
	}
	seen := map[string]entryPath{}
	for _, e := range entries {
		real, ok := b.realPath(e.path)
		if !ok {
			continue
		}
		first, dup := seen[real]
		if !dup {
			seen[real] = e
			continue
		}
		if fieldOrder(e.field, first.field) < 0 {
			first, e = e, first
		}
		refuse(e.field, fmt.Errorf("%s reaches the same node file as %s (%s): /%s; two entries cannot write one file",
			e.path, first.path, first.field, real))
	}
}

// realPath is p's path relative to the root with its folders' symlinks
// resolved (the last element is never followed); ok is false when they
// cannot be.
func (b *batch) realPath(p string) (string, bool) {
	r, err := rel(p)
	if err != nil {
		return "", false
	}
	res, err := b.resolveParents(r)
	if err != nil {
		return "", false
	}
	return path.Join(res.real, path.Base(r)), true
}

// fieldOrder orders fields as they come in the config: files[2] before
// files[10], storage before systemd.
func fieldOrder(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
}
