package hostfs

// tornForTest is the journal-append fault point (package daemon/faultpoint):
// with a hook it writes the first half of an append and tells the hook,
// which may kill the daemon there and leave a torn entry; it returns what
// is left to write (all of data without a hook).
func (t *Txn) tornForTest(data []byte) []byte {
	if t.f.Fault == nil || len(data) < 2 {
		return data
	}
	half := len(data) / 2
	if _, err := t.journal.Write(data[:half]); err != nil {
		return data // the caller's write fails the same way and truncates
	}
	t.f.Fault("journal-append")
	return data[half:]
}
