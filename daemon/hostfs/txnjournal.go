package hostfs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// loadJournal parses the journal and truncates a torn tail: only the last
// append can be torn, since each is fsynced before the next starts, and its
// changes were not made.
func loadJournal(jf *os.File) ([]entry, int64, error) {
	data, err := io.ReadAll(io.NewSectionReader(jf, 0, 1<<62))
	if err != nil {
		return nil, 0, err
	}
	var entries []entry
	off := 0
	for off < len(data) {
		n := bytes.IndexByte(data[off:], '\n')
		var e entry
		if n < 0 || json.Unmarshal(data[off:off+n], &e) != nil || !e.valid() {
			if n >= 0 && anyEntry(data[off+n+1:]) {
				return nil, 0, fmt.Errorf("journal corrupt at byte %d", off)
			}
			if err := jf.Truncate(int64(off)); err != nil {
				return nil, 0, err
			}
			break
		}
		entries = append(entries, e)
		off += n + 1
	}
	return entries, int64(off), nil
}

// anyEntry reports whether data has a whole line that parses as an entry.
func anyEntry(data []byte) bool {
	for line := range bytes.Lines(data) {
		var e entry
		if bytes.HasSuffix(line, []byte("\n")) && json.Unmarshal(line, &e) == nil && e.valid() {
			return true
		}
	}
	return false
}
