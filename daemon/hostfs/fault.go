package hostfs

import (
	"bytes"
	"slices"
)

// tornForTest is the journal-append fault point (package daemon/faultpoint),
// reached only with a hook: it appends the first half of the entries the
// record call is about to append, makes it durable and tells the hook, which
// may kill the daemon there and leave a torn entry, as a crash in the
// middle of the append would. When the daemon goes on, the half is cut off
// again and the record call appends as usual.
func (t *Txn) tornForTest(b *batch, paths []string) {
	var buf bytes.Buffer
	var added []string
	for _, p := range paths {
		if t.recorded[p] || slices.Contains(added, p) {
			continue
		}
		e, err := b.entry(p)
		if err != nil {
			return // the record call reports it
		}
		if writeLine(&buf, e) != nil {
			return
		}
		added = append(added, p)
	}
	if buf.Len() < 2 {
		return
	}
	half := buf.Len() / 2
	if buf.Bytes()[half-1] == '\n' {
		half++ // cut inside an entry, not between two
	}
	if _, err := t.journal.Write(buf.Bytes()[:half]); err == nil && t.journal.Sync() == nil {
		t.f.Fault("journal-append")
	}
	_ = t.journal.Truncate(t.size)
}
