package hostfs

import "path"

// removeTemps removes the temporary files that a write of each rel (named by
// tempName, as replace names them) cut short by a crash left
// beside it: a rollback leaves nothing of the update behind, and no later
// write of the same path may come to remove them.
func (b *batch) removeTemps(rels ...string) error {
	for _, rel := range rels {
		if err := b.remove(path.Join(path.Dir(rel), tempName(path.Base(rel)))); err != nil {
			return err
		}
	}
	return nil
}
