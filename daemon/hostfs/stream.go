package hostfs

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Node files can be of any size, so the daemon never reads one whole: a
// check compares sizes first and then streams the file against the wanted
// contents; a backup or a restore copies it with io.Copy; a transaction
// journals contents into its data file, not into the journal.

// blob locates contents in a transaction's data file.
type blob struct {
	Off int64 `json:"off"`
	Len int64 `json:"len"`
}

// compareChunk is how much of a node file a check reads at a time.
const compareChunk = 64 << 10

// sameContents reports whether s (as read) holds exactly want. It reads at
// most len(want) bytes of the file, in chunks.
func sameContents(s snapshot, want []byte) (bool, error) {
	if s.open == nil {
		return bytes.Equal(s.Data, want), nil
	}
	if s.size != int64(len(want)) {
		return false, nil
	}
	src, err := s.open()
	if err != nil {
		return false, err
	}
	defer src.Close()
	buf := make([]byte, min(compareChunk, max(len(want), 1)))
	for len(want) > 0 {
		n, err := io.ReadFull(src, buf[:min(len(buf), len(want))])
		if !bytes.Equal(buf[:n], want[:n]) {
			return false, nil
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil // shorter than its size said: it changed
		}
		if err != nil {
			return false, err
		}
		want = want[n:]
	}
	n, err := io.ReadFull(src, buf[:1])
	if n > 0 {
		return false, nil // longer: it changed
	}
	if !errors.Is(err, io.EOF) {
		return false, err
	}
	return true, nil
}

// sameAs reports whether s (as read) holds the contents want stands for:
// its Data, or its digest.
func sameAs(s snapshot, want snapshot) (bool, error) {
	if want.digest == nil {
		return sameContents(s, want.Data)
	}
	if sizeOf(s) != want.digest.Size {
		return false, nil
	}
	h := sha256.New()
	if err := writeContents(h, s); err != nil {
		return false, err
	}
	return [sha256.Size]byte(h.Sum(nil)) == want.digest.SHA256, nil
}

// readFile returns a regular file's state; its contents are streamed
// from the file when used (snapshot.open), never read whole.
func readFile(d *os.Root, name string) (snapshot, error) {
	fh, err := openRegular(d, name)
	if err != nil {
		return snapshot{}, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return snapshot{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	return snapshot{Kind: kindFile, Mode: st.Mode & 0o7777, UID: int(st.Uid), GID: int(st.Gid), size: fi.Size(),
		open: func() (io.ReadCloser, error) { return openRegular(d, name) }}, nil
}

// openRegular opens name in d for reading, refusing a symlink, a FIFO or a
// device (one opened without blocking).
func openRegular(d *os.Root, name string) (*os.File, error) {
	fh, err := d.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := fh.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s changed while being read", name)
	}
	if err != nil {
		fh.Close()
		return nil, err
	}
	return fh, nil
}

// writeContents writes s's contents to w, streaming them when s has a
// source instead of Data.
func writeContents(w io.Writer, s snapshot) error {
	if s.open == nil {
		_, err := w.Write(s.Data)
		return err
	}
	src, err := s.open()
	if err != nil {
		return err
	}
	_, err = io.Copy(w, src)
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	return err
}

// sizeOf returns the size of s's contents.
func sizeOf(s snapshot) int64 {
	switch {
	case s.open != nil:
		return s.size
	case s.digest != nil:
		return s.digest.Size
	}
	return int64(len(s.Data))
}

// openData opens (creating it) the data file of the transaction in dir and
// returns it with its size.
func openData(r *os.Root, dir string) (*os.File, int64, error) {
	fh, err := r.OpenFile(dir+"/data", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, err
	}
	end, err := fh.Seek(0, io.SeekEnd)
	if err != nil {
		fh.Close()
		return nil, 0, err
	}
	return fh, end, nil
}

// store copies the contents of a file snapshot read from the node to the
// end of the transaction's data file and makes s point there. It reports
// whether it wrote anything (the data file then needs a sync).
func (t *Txn) store(s *snapshot) (bool, error) {
	if s.Kind != kindFile || s.open == nil {
		return false, nil
	}
	src, err := s.open()
	if err != nil {
		return false, err
	}
	defer src.Close()
	if _, err := t.data.Seek(t.dataEnd, io.SeekStart); err != nil {
		return false, err
	}
	n, err := io.Copy(t.data, src)
	if err != nil {
		return false, fmt.Errorf("copying contents into the journal's data: %w", err)
	}
	s.Blob, s.open = &blob{Off: t.dataEnd, Len: n}, nil
	t.dataEnd += n
	return n > 0, nil
}

// load makes a journaled snapshot stream its contents from the data file.
func (t *Txn) load(s snapshot) snapshot {
	if s.Blob != nil {
		off, n := s.Blob.Off, s.Blob.Len
		s.open = func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(t.data, off, n)), nil }
		s.size = s.Blob.Len
	}
	return s
}

// storeEntry stores the contents of e's snapshots in the data file.
func (t *Txn) storeEntry(e *entry) error {
	for _, s := range []*snapshot{&e.File, &e.Orig} {
		wrote, err := t.store(s)
		if err != nil {
			return err
		}
		t.unsynced = t.unsynced || wrote
	}
	return nil
}

// syncData makes the stored contents durable: before the journal entries
// that point at them are written.
func (t *Txn) syncData() error {
	if !t.unsynced {
		return nil
	}
	if err := t.data.Sync(); err != nil {
		return fmt.Errorf("writing journal data of transaction %s: %w", t.id, err)
	}
	t.unsynced = false
	return nil
}

func (t *Txn) closeData() {
	if t.data != nil {
		t.data.Close()
	}
}
