package hostfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

const benchN = 1000

func benchFiles() []plan.File {
	data := bytes.Repeat([]byte("0123456789abcdef"), 256) // 4 KiB
	files := make([]plan.File, benchN)
	for i := range files {
		files[i] = plan.File{
			Path: fmt.Sprintf("/etc/bench/f%04d.conf", i), Contents: data, Mode: 0o644,
			User: plan.Owner{Name: "core"}, Group: plan.Owner{Name: "core"},
		}
	}
	return files
}

// BenchmarkWriteFiles1000 writes 1,000 files of 4 KiB in one transaction
// with Txn.WriteFiles (one journal fsync), then commits.
func BenchmarkWriteFiles1000(b *testing.B) {
	_, f := newNode(b)
	files := benchFiles()
	b.ResetTimer()
	for i := range b.N {
		tx, err := f.BeginTxn(fmt.Sprintf("bench-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		if err := tx.WriteFiles(files); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTxnWriteFileLoop1000 is the same with one Txn.WriteFile call per
// file, so one journal fsync per file.
func BenchmarkTxnWriteFileLoop1000(b *testing.B) {
	_, f := newNode(b)
	files := benchFiles()
	b.ResetTimer()
	for i := range b.N {
		tx, err := f.BeginTxn(fmt.Sprintf("bench-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		for _, file := range files {
			if err := tx.WriteFile(file); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareAtomicWrite1000 is the baseline: a plain temp, fsync,
// rename loop over the same files with os functions and no root.
func BenchmarkBareAtomicWrite1000(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "etc/bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	files := benchFiles()
	b.ResetTimer()
	for range b.N {
		for _, file := range files {
			p := filepath.Join(dir, filepath.Base(file.Path))
			tmp := p + ".tmp"
			fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fh.Write(file.Contents); err != nil {
				b.Fatal(err)
			}
			if err := fh.Sync(); err != nil {
				b.Fatal(err)
			}
			if err := fh.Close(); err != nil {
				b.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				b.Fatal(err)
			}
		}
	}
}
