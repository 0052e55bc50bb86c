package hostfs

import (
	"strings"
)

// removeTempLeftovers deletes the temporary entries (see replace) that a
// crash in the middle of a write left in the folders of the transaction's
// paths, before its journal is dropped. A write re-run over the same path
// reuses its temporary name and so removes its leftover, but a rollback
// that makes a path absent, or a write the next update does not re-run,
// does not. It runs under f.mu, when no write is in flight, so every such
// entry there is a leftover.
func (t *Txn) removeTempLeftovers(b *batch) error {
	for _, dirRel := range parentDirs(t.paths) {
		d, err := b.dir(dirRel, false)
		if err != nil {
			return err
		}
		if d == nil {
			continue
		}
		fh, err := d.Open(".")
		if err != nil {
			return err
		}
		names, err := fh.Readdirnames(-1)
		fh.Close()
		if err != nil {
			return err
		}
		for _, name := range names {
			if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".nodeconfd-tmp") {
				continue
			}
			if err := d.Remove(name); err != nil && !isNotExist(err) {
				return err
			}
			b.dirty[dirRel] = true
		}
	}
	return b.sync()
}
