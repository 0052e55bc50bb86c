package hostfs

import (
	"bytes"
	"fmt"
	"path"
	"slices"
)

// A transaction's first write of a file keeps its original once, in its
// backup (byOrig, restoreFile), and journals the folders the write makes,
// so that a rollback removes them (missingDirs).

// byOrig makes e point at the original backup instead of holding the file
// (kindOrig) when the write that follows makes that backup: a regular file
// the daemon never wrote, with neither a backup nor a no-original marker
// (writeTargets saves it, durably, before it writes).
func (e *entry) byOrig() {
	if e.File.Kind == kindFile && e.Orig.Kind == kindAbsent && !e.NoOrig {
		e.File = snapshot{Kind: kindOrig}
	}
}

// restoreFile puts back the state s of rel. A kindOrig state is the
// original backup: when it is there, it is copied back and made durable
// before the caller drops the backup, so that a crash in between finds
// it again; when it is gone, rel was never changed or holds it already.
func (b *batch) restoreFile(r string, s snapshot) error {
	if s.Kind != kindOrig {
		return b.put(r, s)
	}
	orig, err := b.read(origRel + "/" + r)
	if err != nil || orig.Kind == kindAbsent {
		return err
	}
	return b.steps(func() error { return b.put(r, orig) })
}

// newDirs writes to buf the journal entries of the folders that writing
// the node paths ps will create, not yet recorded, as absent folders, and
// returns their paths. Parents come first: a rollback, which runs
// backwards, removes the files, then the folders from the deepest, each
// only when empty (restoreDir).
func (t *Txn) newDirs(b *batch, buf *bytes.Buffer, ps []string) ([]string, error) {
	dirs, err := b.missingDirs(ps)
	if err != nil {
		return nil, err
	}
	var added []string
	for _, d := range dirs {
		if p := "/" + d; !t.recorded[p] {
			if err := writeLine(buf, entry{Path: p, Dir: &dirState{}}); err != nil {
				return nil, fmt.Errorf("journaling %s: %w", p, err)
			}
			added = append(added, p)
		}
	}
	return added, nil
}

// missingDirs returns the folders that writing the node paths ps would
// create, as real paths (see realDir), parents first.
func (b *batch) missingDirs(ps []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		r, err := rel(p)
		if err != nil {
			return nil, err
		}
		real, err := b.realDir(path.Dir(r))
		if err != nil {
			return nil, fmt.Errorf("journaling %s: %w", p, err)
		}
		var chain []string
		for d := real; d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			if _, err := b.f.root.Lstat(d); err == nil {
				break
			} else if !isNotExist(err) {
				return nil, fmt.Errorf("journaling %s: %w", p, err)
			}
			chain = append(chain, d)
		}
		for _, d := range slices.Backward(chain) {
			out = append(out, d)
		}
	}
	return out, nil
}
